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
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from castbench.agents.traits import parse_traits
from castbench.defaults import DEFAULT_DB, DEFAULT_LEASE_S, DEFAULT_MAX_TRIALS, GradingMode
from castbench.models.resolve import ModelOptions
from castbench.records.config import Limits, Verification
from castbench.records.perturbations import Perturbations
from castbench.runner.deadline import TimeLimits

if TYPE_CHECKING:  # the domains load when a run asks for them, not with its options
    from castbench.domain import Domain

__all__ = [
    "DEFAULTS",
    "MAX_TRIALS_PER_TASK",
    "AgentOptions",
    "Baselines",
    "EvalFields",
    "EvalOptions",
    "ExecutionOptions",
    "ModelSettings",
    "OptionsError",
    "TaskSelection",
]

MAX_TRIALS_PER_TASK = 1000
"""More trials per task than anyone needs for pass^k (τ-Bench uses 4 to 8): a guard against a
typo (`--trials 1000000000`) that would run for ever and store without end."""


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _checked_traits(value: str | None) -> str | None:
    parse_traits(value)  # a ValueError naming the trait or level
    return value


class AgentOptions(_Group):
    """Who plays: agent strings as `castbench.models.resolve` reads them (a built-in, an import
    path, an agent service or a model), and the simulated user's trait profile."""

    policy: str = "scripted:noisy"
    critic: str = "none"
    user: str = "scripted"
    traits: str | None = None
    """A trait profile, `impatience=high,confusion=low` (`castbench.agents.traits`)."""
    in_process: bool = False
    """Import-path agents inside castbench's process (debugging; leaderboards refuse the run)."""

    _traits = field_validator("traits")(_checked_traits)


class TaskSelection(_Group):
    """Which tasks, how often, from which seed."""

    domains: str | None = "all"
    """Domain names, comma-separated, or `all`."""
    split: str = "test"
    tasks: list[str] | None = None
    """Task ids (a comma-separated string is split); None: every task of the split."""
    tasks_file: str | None = None
    """A private split's file (`castbench tasks generate`): its domain and tasks instead of
    `domains` and `split`; the split's digest names it in the run (`castbench.domain.private`)."""
    trials: int = Field(8, ge=1)
    """Trials per task (n)."""
    seed: int = 0
    """The run seed; every trial's seed derives from it."""
    add_trials: int = Field(0, ge=0)
    """Top the stored run up by this many more trials per task (`castbench.runner.topup`)."""
    max_trials: int = Field(DEFAULT_MAX_TRIALS, ge=1)
    """The cap on trials per task `add_trials` tops up to."""

    @field_validator("domains")
    @classmethod
    def _domain_names(cls, value: str | None) -> str | None:
        if value is not None and not [name for name in value.split(",") if name.strip()]:
            raise ValueError("no domain given: name one or more (castbench domains list), or 'all'")
        return value

    @field_validator("tasks", mode="before")
    @classmethod
    def _task_ids(cls, value: Any) -> Any:
        ids = [item.strip() for item in value.split(",")] if isinstance(value, str) else value
        if ids is not None and not [item for item in ids if item]:
            raise ValueError("no task id given: name at least one, or leave the option out for every task")
        return [item for item in ids if item] if ids is not None else None

    @field_validator("trials")
    @classmethod
    def _capped(cls, value: int) -> int:
        if value > MAX_TRIALS_PER_TASK:
            raise ValueError(f"{value} trials per task is more than the cap of {MAX_TRIALS_PER_TASK}")
        return value


class ModelSettings(_Group):
    """Run-wide settings of model agents (`castbench.models.settings`) and the spending cap."""

    models_config: str | Path | dict[str, dict[str, Any]] | None = None
    """A TOML/JSON file of per-role settings, or its parsed tables (recorded in the config)."""
    api_base: str | None = None
    """An OpenAI-compatible server for model roles."""
    cache_dir: str | None = None
    """Cache model answers in this folder (not part of the run's identity)."""
    max_cost: float | None = Field(None, ge=0)
    """Stop starting trials once a run has spent this many USD."""


class ExecutionOptions(_Group):
    """Where and how the trials run and are stored; none of it is part of a run's identity."""

    db: str = DEFAULT_DB
    """The results store: a SQLite file path or URL, or a Postgres URL several processes share."""
    concurrency: int = Field(1, ge=1)
    """Trials at once (and model calls in flight per server)."""
    executor: str = "local"
    """`local` (threads in this process) or `ray` (`castbench.runner.executors`)."""
    ray_address: str | None = None
    """`executor="ray"`: the cluster to join; None: a local one."""
    lease_s: float = Field(DEFAULT_LEASE_S, ge=1)
    """Postgres: seconds a silent worker keeps its claimed trials before the others take them."""
    fresh: bool = False
    """A new run even if these options were run before (else the stored run is resumed)."""


class Baselines(_Group):
    """Runs besides the one asked for, that its summary is measured against."""

    paired: bool = False
    """Also run without the critic (same tasks and seeds): the critic's effect."""
    sweep_traits: list[str] | None = None
    """Trait profiles also run (a `;`-separated string is split): each one's pass^k drop against
    no traits (`castbench.report.traits`)."""

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
    limits: Limits | None = None
    """None: the domain packs' own limits when they all agree (τ²'s), else `Limits()`."""
    time_limits: TimeLimits = TimeLimits()
    """Wall-clock limits on agents (recorded in the run's metadata, not its identity)."""
    verification: Verification = Verification()
    grading: GradingMode = "castbench"
    """How required outputs are found: `castbench` (numbers as numbers, whole words) or τ-Bench's
    `tau` (substring)."""
    reply_judge: str | None = None
    """A model (`provider/model?key=value`, `castbench.models.reply_judge`) that decides the reply
    checks instead of the rules, their verdicts kept beside its own; None (the default): the rules."""
    perturbations: Perturbations = Perturbations()
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
        """The model settings as agent resolution takes them (`castbench.models.resolve`), a
        `models_config` file read and checked; `concurrency` sizes the servers' default limits."""
        layers = self.models.models_config
        if isinstance(layers, str | Path):
            from castbench.models.settings import load_models_config  # model runs' only (tomllib, checks)

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
