"""An evaluation's options, typed once: what `castbench eval` (and `castbench profile`, which
takes eval's options), `castbench.evaluate`, `castbench mcp serve` and the step-wise `Environment`
are given, each default written here and nowhere else.

    options = EvalOptions.of(domains="retail", policy="oracle", trials=4)
    castbench.evaluate(options)              # the same as castbench.evaluate(domains="retail", ...)

The options come in groups (`agents`, `selection`, `models`, `execution`, `baselines`, and the
run's `limits`, `time_limits`, `verification`, `grading` and `perturbations`, the models a run's
config stores). `EvalOptions.of` takes them flat, as keywords (`trials=4`, `lease_s=30`), the way
`castbench.evaluate` has always taken them; `EvalFields` types those keywords for callers.

Bad values fail with an `OptionsError`: one line per problem naming the option as given (a
keyword here, a flag on the command line, which maps the same problems to its flags). The CLI
reads its flags' defaults from `DEFAULTS`, so `castbench eval --help` shows these values: this
module imports nothing heavy (no store, domain, grader or engine).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from castbench._agents.models.resolve import ModelOptions
from castbench._agents.traits import parse_traits
from castbench._base.defaults import DEFAULT_DB, DEFAULT_LEASE_S, DEFAULT_MAX_TRIALS, GradingMode
from castbench._records.config import Limits, Verification
from castbench._records.perturbations import Perturbations
from castbench._trial.deadline import TimeLimits

if TYPE_CHECKING:  # the domains load when a run asks for them, not with its options
    from castbench._domain.domain import Domain

__all__ = [
    "DB_FLAG",
    "DEFAULTS",
    "MAX_TRIALS_PER_TASK",
    "OFF_THE_COMMAND_LINE",
    "AgentOptions",
    "Baselines",
    "CommandLineFlag",
    "EvalFields",
    "EvalOptions",
    "ExecutionOptions",
    "Flag",
    "Flags",
    "ModelSettings",
    "OptionsError",
    "TaskSelection",
    "command_line_flags",
    "field_flag",
]

MAX_TRIALS_PER_TASK = 1000
"""More trials per task than anyone needs for pass^k (τ-Bench uses 4 to 8): a guard against a
typo (`--trials 1000000000`) that would run for ever and store without end."""


class _FieldDefault:
    def __repr__(self) -> str:
        return "FIELD_DEFAULT"


FIELD_DEFAULT: Any = _FieldDefault()
"""`Flag.default` left out: the flag's default is its field's."""
AGENTS, RUN, LOOP, MODELS, PERTURB = "Agents", "Run", "Critic loop", "Models", "Perturbations"
"""The panels of `castbench eval --help` the flags are shown in (None: the command's own)."""


@dataclass(frozen=True)
class Flag:
    """How a field is given on the command line: declared beside the field (`Annotated[...,
    Flag(...)]`, or `Flags` for the fields of a model defined elsewhere), so that adding an option
    to `castbench eval` and `castbench profile` is adding a field here (`castbench._cli.eval_flags`
    builds the flags from these)."""

    help: str
    panel: str | None = None
    name: str | None = None
    """The flag without its dashes (`cache` for `--cache`); None: the field's name, dashed."""
    short: str | None = None
    """A one-letter alias (`-d`)."""
    envvar: str | None = None
    """A variable the flag is read from when not given."""
    switch: bool = False
    """A bool given by the flag alone (`--in-process`), with no `--no-...` form."""
    type: Any = None
    """What the command line takes when not the field's own type (a comma-separated `str` for a
    list, `str` for a choice the model checks, so its error line is the model's)."""
    default: Any = FIELD_DEFAULT
    """The command line's default when not the field's (`all` for a list of every kind)."""
    convert: Callable[[Any], Any] | None = None
    """The value given -> the field's (a value left out, None, keeps the field's default)."""


@dataclass(frozen=True)
class Flags:
    """The flags of the fields of a model defined outside this module (`Limits`, `TimeLimits`,
    `Verification`, `Perturbations`), by field name; its other fields have no flag."""

    fields: dict[str, Flag]


def _one_item(value: str) -> list[str]:
    """A comma-separated list as one item: the model's check splits and names the kinds."""
    return [value]


def _none_if_zero(value: float) -> float | None:
    """A time limit of 0: none."""
    return value or None


DB_FLAG = Flag(
    "Results database: a SQLite file path or sqlite:///FILE URL, or postgresql://USER@HOST:PORT/DB, "
    "a store several eval processes share (pip install 'castbench\\[postgres]').",
    envvar="CASTBENCH_DB",
)
"""`--db`, as every command that reads or writes a store takes it (`castbench._cli.options`)."""
_MAX_STEPS = Flag(
    f"Agent actions per trial (default {Limits().max_steps}; τ²'s packs default to τ²'s own limits: 200 "
    "messages as τ² counts them, 10 tool errors); given, it replaces the pack's limits.",
    RUN,
    type=int | None,
)


def _time_limit(name: str, what: str) -> Flag:
    return Flag(
        f"Seconds {what} may take (0: no limit); past it the trial ends as timeout.",
        RUN,
        name=name,
        type=float,
        convert=_none_if_zero,
    )


def _kinds(name: str, help: str, default: str | None) -> Flag:
    return Flag(
        help,
        PERTURB,
        name=name,
        type=str | None if default is None else str,
        default=default,
        convert=_one_item,
    )


_PERTURBATION_FLAGS = {
    "tool_faults": Flag(
        "Share of tool calls the harness fails, 0 to 1 (seeded per call; a call retried succeeds).", PERTURB
    ),
    "fault_kinds": _kinds(
        "fault-kinds",
        "Faults drawn: error, timeout, rate_limit, empty, malformed (comma-separated) or all.",
        "all",
    ),
    "user": _kinds(
        "user-perturb",
        "Reword what the user says: paraphrase, reorder, typos (comma-separated) or all.",
        None,
    ),
    "env": _kinds(
        "env-perturb", "Reshape JSON tool outputs: field_order, extra_fields (comma-separated) or all.", None
    ),
    "seed": Flag("Seed of the perturbations' draws.", PERTURB, name="perturb-seed"),
}


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _checked_traits(value: str | None) -> str | None:
    parse_traits(value)  # a ValueError naming the trait or level
    return value


class AgentOptions(_Group):
    """Who plays: agent strings as `castbench._agents.models.resolve` reads them (a built-in, an import
    path, an agent service or a model), and the simulated user's trait profile."""

    policy: Annotated[
        str, Flag("Built-in name, module:Class import path, or litellm model string.", AGENTS)
    ] = "scripted:noisy"
    critic: Annotated[str, Flag("Critic: none, a built-in, import path or model.", AGENTS)] = "none"
    user: Annotated[str, Flag("User simulator: scripted, import path or model.", AGENTS)] = "scripted"
    traits: Annotated[str | None, Flag("User trait profile, e.g. impatience=high,confusion=low.", AGENTS)] = (
        None
    )
    """A trait profile, `impatience=high,confusion=low` (`castbench._agents.traits`)."""
    in_process: Annotated[
        bool,
        Flag(
            "Run import-path agents inside castbench's process (debugging; recorded in the run, "
            "refused by leaderboards). By default each runs in a worker process of its own.",
            AGENTS,
            switch=True,
        ),
    ] = False
    """Import-path agents inside castbench's process (debugging; leaderboards refuse the run)."""

    _traits = field_validator("traits")(_checked_traits)


MAX_NAME_LENGTH = 1_000
"""The longest domain name or task id accepted (the longest real one, a τ² telecom task id, is
under 200 characters): a value of 100,000 characters is a slip, refused before any look-up."""


def _not_too_long(what: str, value: str) -> None:
    if len(value) > MAX_NAME_LENGTH:
        raise ValueError(
            f"a {what} of {len(value):,} characters ({value[:40]}…); none is longer than {MAX_NAME_LENGTH:,}"
        )


class TaskSelection(_Group):
    """Which tasks, how often, from which seed."""

    domains: Annotated[
        str | None, Flag("Domain name(s), comma-separated, or 'all'.", name="domain", short="-d", type=str)
    ] = "all"
    """Domain names, comma-separated, or `all`."""
    split: Annotated[str, Flag("Task split: test or train.")] = "test"
    tasks: Annotated[list[str] | None, Flag("Comma-separated task ids.", RUN, type=str | None)] = None
    """Task ids (a comma-separated string is split); None: every task of the split."""
    tasks_file: Annotated[
        str | None,
        Flag(
            "A private split (`castbench tasks generate`): its domain and tasks instead of --domain "
            "and --split; the run is named by the split's digest.",
            RUN,
        ),
    ] = None
    """A private split's file (`castbench tasks generate`): its domain and tasks instead of
    `domains` and `split`; the split's digest names it in the run (`castbench._domain.private`)."""
    trials: Annotated[int, Field(ge=1), Flag(f"Trials per task (n, at most {MAX_TRIALS_PER_TASK}).", RUN)] = 8
    """Trials per task (n)."""
    seed: Annotated[int, Flag("Run seed; trial seeds derive from it.", RUN)] = 0
    """The run seed; every trial's seed derives from it."""
    add_trials: Annotated[
        int,
        Field(ge=0),
        Flag(
            "Top up the stored run with these options by N more trials per task (fresh seeds); "
            "pass^k is re-estimated on all.",
            RUN,
        ),
    ] = 0
    """Top the stored run up by this many more trials per task (`castbench._run.topup`)."""
    max_trials: Annotated[int, Field(ge=1), Flag("Cap on trials per task for --add-trials.", RUN)] = (
        DEFAULT_MAX_TRIALS
    )
    """The cap on trials per task `add_trials` tops up to."""

    @field_validator("domains")
    @classmethod
    def _domain_names(cls, value: str | None) -> str | None:
        if value is not None and not [name for name in value.split(",") if name.strip()]:
            raise ValueError("no domain given: name one or more (castbench domains list), or 'all'")
        for name in (value or "").split(","):
            _not_too_long("domain name", name)
        return value

    @field_validator("tasks", mode="before")
    @classmethod
    def _task_ids(cls, value: Any) -> Any:
        ids = [item.strip() for item in value.split(",")] if isinstance(value, str) else value
        if ids is not None and not [item for item in ids if item]:
            raise ValueError("no task id given: name at least one, or leave the option out for every task")
        for item in ids or ():
            if isinstance(item, str):
                _not_too_long("task id", item)
        return [item for item in ids if item] if ids is not None else None

    @field_validator("trials")
    @classmethod
    def _capped(cls, value: int) -> int:
        if value > MAX_TRIALS_PER_TASK:
            raise ValueError(f"{value} trials per task is more than the cap of {MAX_TRIALS_PER_TASK}")
        return value


class ModelSettings(_Group):
    """Run-wide settings of model agents (`castbench._agents.models.settings`) and the spending cap."""

    models_config: Annotated[
        str | Path | dict[str, dict[str, Any]] | None,
        Flag(
            "TOML/JSON per-role model settings.", MODELS, envvar="CASTBENCH_MODELS_CONFIG", type=Path | None
        ),
    ] = None
    """A TOML/JSON file of per-role settings, or its parsed tables (recorded in the config)."""
    api_base: Annotated[
        str | None, Flag("OpenAI-compatible server for model roles.", MODELS, envvar="CASTBENCH_API_BASE")
    ] = None
    """An OpenAI-compatible server for model roles."""
    cache_dir: Annotated[
        str | None,
        Flag(
            "Cache model answers in this directory.",
            MODELS,
            name="cache",
            envvar="CASTBENCH_CACHE",
            type=Path | None,
            convert=str,
        ),
    ] = None
    """Cache model answers in this folder (not part of the run's identity)."""
    max_cost: Annotated[
        float | None, Field(ge=0), Flag("Stop starting trials after this many USD.", MODELS)
    ] = None
    """Stop starting trials once a run has spent this many USD."""


class ExecutionOptions(_Group):
    """Where and how the trials run and are stored; none of it is part of a run's identity."""

    db: Annotated[str, DB_FLAG] = DEFAULT_DB
    """The results store: a SQLite file path or URL, or a Postgres URL several processes share."""
    concurrency: Annotated[
        int, Field(ge=1), Flag("Trials run at once (and model calls in flight per server).", RUN)
    ] = 1
    """Trials at once (and model calls in flight per server)."""
    executor: Annotated[
        str,
        Flag(
            "Where trials run: 'local' (threads in this process) or 'ray' (tasks on a Ray "
            "cluster, pip install 'castbench\\[ray]'; this process still owns the run and the store).",
            RUN,
        ),
    ] = "local"
    """`local` (threads in this process) or `ray` (`castbench._run.executors`)."""
    ray_address: Annotated[
        str | None,
        Flag(
            "--executor ray: the cluster to join (HOST:PORT or ray://HOST:PORT); default: a local one.",
            RUN,
            envvar="RAY_ADDRESS",
        ),
    ] = None
    """`executor="ray"`: the cluster to join; None: a local one."""
    lease_s: Annotated[
        float,
        Field(ge=1),
        Flag(
            "Postgres --db: seconds a silent worker keeps its claimed trials before other "
            "eval processes on the same run take them over.",
            RUN,
            name="lease",
            envvar="CASTBENCH_LEASE_S",
        ),
    ] = DEFAULT_LEASE_S
    """Postgres: seconds a silent worker keeps its claimed trials before the others take them."""
    fresh: Annotated[bool, Flag("Start a new run even if this config was run before.")] = False
    """A new run even if these options were run before (else the stored run is resumed)."""


class Baselines(_Group):
    """Runs besides the one asked for, that its summary is measured against."""

    paired: Annotated[bool, Flag("Also run without the critic (same seeds) to measure its effect.", LOOP)] = (
        False
    )
    """Also run without the critic (same tasks and seeds): the critic's effect."""
    sweep_traits: Annotated[
        list[str] | None,
        Flag(
            "Also run these profiles (';'-separated, e.g. 'impatience=high;confusion=high') and "
            "report each one's pass^k drop against no traits.",
            AGENTS,
            type=str | None,
        ),
    ] = None
    """Trait profiles also run (a `;`-separated string is split): each one's pass^k drop against
    no traits (`castbench._results.report.traits`)."""

    @field_validator("sweep_traits", mode="before")
    @classmethod
    def _profiles(cls, value: Any) -> Any:
        profiles = [p.strip() for p in value.split(";")] if isinstance(value, str) else value
        if profiles is None:
            return None
        profiles = [p for p in profiles if p]
        if not profiles:
            raise ValueError("no profile given: give profiles like 'impatience=high;confusion=high'")
        for profile in profiles:
            _checked_traits(profile)
        return profiles


class EvalOptions(BaseModel):
    """Everything `castbench.evaluate` is told: the run's options, where it runs, what else runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agents: AgentOptions = AgentOptions()
    selection: TaskSelection = TaskSelection()
    limits: Annotated[Limits | None, Flags({"max_steps": _MAX_STEPS})] = None
    """None: the domain packs' own limits when they all agree (τ²'s), else `Limits()`."""
    time_limits: Annotated[
        TimeLimits,
        Flags(
            {
                "step_s": _time_limit("step-timeout", "an agent step"),
                "trial_s": _time_limit("trial-timeout", "a trial"),
            }
        ),
    ] = TimeLimits()
    """Wall-clock limits on agents (recorded in the run's metadata, not its identity)."""
    verification: Annotated[
        Verification,
        Flags(
            {
                "rounds": Flag("Critic verdicts per step (1 to 10).", LOOP),
                "on_exhausted": Flag("When the rounds run out: execute or block.", LOOP, type=str),
                "scope": Flag(
                    "Actions the critic checks: tool_calls, writes or all.", LOOP, name="verify", type=str
                ),
            }
        ),
    ] = Verification()
    grading: Annotated[
        GradingMode,
        Flag(
            "How required outputs are found: castbench (numbers as numbers, whole words) "
            "or tau (τ-Bench's substring).",
            RUN,
            type=str,
        ),
    ] = "castbench"
    """How required outputs are found: `castbench` (numbers as numbers, whole words) or τ-Bench's
    `tau` (substring)."""
    reply_judge: Annotated[
        str | None,
        Flag(
            "A model (provider/model, settings as ?key=value) that decides the reply checks "
            "instead of the rules, at temperature 0 with a seed; the rules' verdicts are kept beside "
            "and its agreement with them reported. Recorded in the run's identity. Not the default.",
            RUN,
        ),
    ] = None
    """A model (`provider/model?key=value`, `castbench._agents.models.reply_judge`) that decides the reply
    checks instead of the rules, their verdicts kept beside its own; None (the default): the rules."""
    perturbations: Annotated[Perturbations, Flags(_PERTURBATION_FLAGS)] = Perturbations()
    models: ModelSettings = ModelSettings()
    execution: ExecutionOptions = ExecutionOptions()
    baselines: Baselines = Baselines()
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further scoring-relevant settings, recorded in the run's config."""

    @classmethod
    def of(cls, options: EvalOptions | None = None, **fields: Any) -> EvalOptions:
        """`options` (default: every default) with the keywords given changed: a group's field by
        its own name (`trials=4`), a whole field by its name (`limits=Limits(...)`). Unknown
        keywords and bad values raise `OptionsError`."""
        base = (options or DEFAULTS).model_dump()
        for name, value in fields.items():
            group = _GROUP_OF.get(name)
            if group is not None:
                base[group][name] = value
            elif name in cls.model_fields and name not in _GROUPS:
                base[name] = value
            else:
                raise OptionsError([((name,), value, "not an option of castbench.evaluate")])
        try:
            return cls.model_validate(base)
        except ValidationError as exc:
            raise OptionsError.of(exc) from None

    def flat(self) -> dict[str, Any]:
        """The options as `of`'s keywords: `EvalOptions.of(**options.flat()) == options`."""
        flat: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name in _GROUPS:
                flat.update({field: getattr(value, field) for field in type(value).model_fields})
            else:
                flat[name] = value
        return flat

    def limits_for(self, domains: Iterable[Domain]) -> Limits:
        """The trials' limits on `domains`: these options', else the packs' own
        (`Domain.default_limits`, τ²'s on its packs) when every pack has the same, else castbench's.
        The same in an eval run and in the `Environment`, so a trial ends at the same step in both."""
        if self.limits is not None:
            return self.limits
        chosen = {tuple(sorted(domain.default_limits.items())) for domain in domains}
        return Limits.model_validate(dict(chosen.pop())) if len(chosen) == 1 else Limits()

    def model_options(self) -> ModelOptions:
        """The model settings as agent resolution takes them (`castbench._agents.models.resolve`), a
        `models_config` file read and checked; `concurrency` sizes the servers' default limits."""
        layers = self.models.models_config
        if isinstance(layers, str | Path):
            from castbench._agents.models.settings import (
                load_models_config,  # model runs' only (tomllib, checks)
            )

            layers = load_models_config(layers)
        return ModelOptions(layers, self.models.api_base, self.models.cache_dir, self.execution.concurrency)

    def replace(self, **fields: Any) -> EvalOptions:
        """These options with some keywords changed (`traits=None`), validated as `of` does."""
        return type(self).of(self, **fields)


_GROUPS: dict[str, type[BaseModel]] = {
    name: info.annotation
    for name, info in EvalOptions.model_fields.items()
    if isinstance(info.annotation, type) and issubclass(info.annotation, _Group)
}
_GROUP_OF: dict[str, str] = {field: group for group, model in _GROUPS.items() for field in model.model_fields}
"""A flat keyword -> the group it belongs to (`trials` -> `selection`)."""

DEFAULTS = EvalOptions()
"""Every default, for the command line's flags (`DEFAULTS.selection.trials`)."""


class CommandLineFlag(NamedTuple):
    """One flag of `castbench eval`: the field it sets, how it is given, what it takes."""

    path: tuple[str, ...]
    """The field's place in `EvalOptions` (`("selection", "trials")`)."""
    flag: Flag
    name: str
    """The flag's name, dashed (`max-steps`); its parameter's is underscored (`max_steps`)."""
    type: Any
    default: Any


OFF_THE_COMMAND_LINE: dict[tuple[str, ...], str] = {
    ("extra",): "scoring settings of callers of castbench.evaluate (a pack's data is recorded there)",
    ("limits", "max_tool_errors"): "τ²'s limits: its packs' own default (--max-steps replaces them)",
    ("limits", "max_messages"): "τ²'s limits: its packs' own default (--max-steps replaces them)",
}
"""The fields no flag sets, and why (`tests/cli/test_cli_eval_flags.py` holds every other field
to have a flag)."""


def _flag_of(info: Any) -> Flag | Flags | None:
    return next((item for item in info.metadata if isinstance(item, Flag | Flags)), None)


def field_flag(model: type[BaseModel], name: str) -> Flag:
    """The flag declared beside `model`'s field `name` (other commands' `--domain`, `--split`)."""
    flag = _flag_of(model.model_fields[name])
    assert isinstance(flag, Flag), f"{model.__name__}.{name} declares no flag"
    return flag


def command_line_flags() -> list[CommandLineFlag]:
    """Every flag the fields declare, in the fields' order: `castbench eval`'s options."""
    found: list[CommandLineFlag] = []

    def add(path: tuple[str, ...], flag: Flag, annotation: Any, default: Any) -> None:
        name = flag.name or path[-1].replace("_", "-")
        chosen = default if flag.default is FIELD_DEFAULT else flag.default
        found.append(
            CommandLineFlag(path, flag, name, annotation if flag.type is None else flag.type, chosen)
        )

    for name, info in EvalOptions.model_fields.items():
        value = getattr(DEFAULTS, name)
        declared = _flag_of(info)
        if name in _GROUPS:
            for field_name, field_info in _GROUPS[name].model_fields.items():
                flag = _flag_of(field_info)
                if isinstance(flag, Flag):
                    add((name, field_name), flag, field_info.annotation, getattr(value, field_name))
        elif isinstance(declared, Flags):
            model = next(
                arg
                for arg in (info.annotation, *getattr(info.annotation, "__args__", ()))
                if isinstance(arg, type) and issubclass(arg, BaseModel)
            )
            for field_name, flag in declared.fields.items():
                default = None if value is None else getattr(value, field_name)
                add((name, field_name), flag, model.model_fields[field_name].annotation, default)
        elif isinstance(declared, Flag):
            add((name,), declared, info.annotation, value)
    return found


class EvalFields(TypedDict, total=False):
    """`EvalOptions.of`'s keywords, typed, for `castbench.evaluate(**fields)` and its callers
    (kept equal to the model's fields by `tests/core/test_options.py`)."""

    policy: str
    critic: str
    user: str
    traits: str | None
    in_process: bool
    domains: str | None
    split: str
    tasks: list[str] | str | None
    tasks_file: str | None
    trials: int
    seed: int
    add_trials: int
    max_trials: int
    limits: Limits | None
    time_limits: TimeLimits
    verification: Verification
    grading: GradingMode
    reply_judge: str | None
    perturbations: Perturbations
    models_config: str | Path | dict[str, dict[str, Any]] | None
    api_base: str | None
    cache_dir: str | None
    max_cost: float | None
    db: str
    concurrency: int
    executor: str
    ray_address: str | None
    lease_s: float
    fresh: bool
    paired: bool
    sweep_traits: list[str] | str | None
    extra: dict[str, Any]


Problem = tuple[tuple[str | int, ...], Any, str]
"""Where (the field's path), the value given, and what is wrong with it."""


class OptionsError(ValueError):
    """Options that cannot be run: each problem names its option (`trials 0: ...`)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__(self.describe(_keyword))

    @classmethod
    def of(cls, exc: ValidationError) -> OptionsError:
        """The problems pydantic found. A check of castbench's own (`value_error`) says in its
        reason what it was given, so the value is not repeated (None)."""
        return cls(
            [
                (tuple(e["loc"]), None if e["type"] == "value_error" else e.get("input"), _reason(e))
                for e in exc.errors()
            ]
        )

    def describe(self, name: Callable[[tuple[str | int, ...]], str]) -> str:
        """One line: each problem as `NAME VALUE: reason` (`NAME: reason` without a value), `name`
        naming a field's path (a flag on the command line)."""
        said = [
            f"{name(where)}: {reason}" if given is None else f"{name(where)} {given!r}: {reason}"
            for where, given, reason in self.problems
        ]
        return "; ".join(said)


def _keyword(where: tuple[str | int, ...]) -> str:
    """A field's path as `EvalOptions.of` takes it: `trials`, `verification.rounds`."""
    return ".".join(str(part) for part in (where[1:] if where and where[0] in _GROUPS else where))


def _reason(error: Any) -> str:
    if error["type"] == "literal_error":
        choices = re.findall(r"'([^']*)'", str(error["ctx"]["expected"]))
        return f"must be one of {', '.join(choices)}"
    return str(error["msg"]).removeprefix("Value error, ")
