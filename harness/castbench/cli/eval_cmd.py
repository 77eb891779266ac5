"""`castbench eval`: run (or resume) an evaluation, show pass^k tables, store everything.

The flags are `castbench.options.EvalOptions` on the command line: each one sets a field of it
(`_FIELDS`), its default is the model's (`DEFAULTS`), and the model's checks are the flags' checks,
a bad value one `error:` line naming the flag. The evaluation itself, with its paired run and trait
sweep, is `castbench.evaluate`'s; this module shows it.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from castbench.agents.registry import AgentSpecError, Role
from castbench.cli.checks import check_writable, sqlite_run_taken
from castbench.cli.errors import AGENT_BROKEN, fail
from castbench.cli.interrupts import one_interrupt
from castbench.cli.options import DbOption, DomainOption, SplitOption, Tau2DataOption
from castbench.errors import InfrastructureError, RunInterrupted, ServerDown
from castbench.options import DEFAULTS, EvalOptions, OptionsError, TaskSelection
from castbench.records.config import Limits

if TYPE_CHECKING:
    from castbench.api import EvalResult
    from castbench.records.config import RunConfig
    from castbench.records.provenance import Provenance
    from castbench.records.trial import TrialRecord

console = Console()
_STDOUT = Path("-")
"""`--output -`: the JSON summary on stdout (not a file named `-`)."""
_AGENTS = "Agents"
_RUN = "Run"
_LOOP = "Critic loop"
_MODELS = "Models"
_PERTURB = "Perturbations"
_AGENT, _SELECTION, _MODEL = DEFAULTS.agents, DEFAULTS.selection, DEFAULTS.models
_EXECUTION, _LIMITS, _LOOP_DEFAULTS = DEFAULTS.execution, DEFAULTS.time_limits, DEFAULTS.verification
_STEPS = Limits().max_steps
"""Agent actions per trial unless the options or the packs set limits (`EvalOptions.limits_for`)."""

_FIELDS: dict[str, tuple[str, ...]] = {
    "domain": ("selection", "domains"),
    "split": ("selection", "split"),
    "tasks_file": ("selection", "tasks_file"),
    "tasks": ("selection", "tasks"),
    "trials": ("selection", "trials"),
    "seed": ("selection", "seed"),
    "add_trials": ("selection", "add_trials"),
    "max_trials": ("selection", "max_trials"),
    "policy": ("agents", "policy"),
    "critic": ("agents", "critic"),
    "user": ("agents", "user"),
    "traits": ("agents", "traits"),
    "in_process": ("agents", "in_process"),
    "max_steps": ("limits", "max_steps"),
    "step_timeout": ("time_limits", "step_s"),
    "trial_timeout": ("time_limits", "trial_s"),
    "rounds": ("verification", "rounds"),
    "on_exhausted": ("verification", "on_exhausted"),
    "verify": ("verification", "scope"),
    "grading": ("grading",),
    "reply_judge": ("reply_judge",),
    "tool_faults": ("perturbations", "tool_faults"),
    "fault_kinds": ("perturbations", "fault_kinds"),
    "user_perturb": ("perturbations", "user"),
    "env_perturb": ("perturbations", "env"),
    "perturb_seed": ("perturbations", "seed"),
    "api_base": ("models", "api_base"),
    "models_config": ("models", "models_config"),
    "cache": ("models", "cache_dir"),
    "max_cost": ("models", "max_cost"),
    "db": ("execution", "db"),
    "concurrency": ("execution", "concurrency"),
    "executor": ("execution", "executor"),
    "ray_address": ("execution", "ray_address"),
    "lease": ("execution", "lease_s"),
    "fresh": ("execution", "fresh"),
    "paired": ("baselines", "paired"),
    "sweep_traits": ("baselines", "sweep_traits"),
}
"""eval's parameter -> the `EvalOptions` field it sets. The others (`--suite`, `--output`,
`--allow-incomplete`, `--tau2-data`, `--counterfactuals`) are the command's own."""


def _tasks_named(selection: TaskSelection) -> str:
    if selection.tasks_file is not None:
        return f"the private split in {selection.tasks_file}"
    return f"domains {selection.domains} ({selection.split} split)"


def _flag(where: tuple[str | int, ...]) -> str:
    """The flag that sets the field at `where` (`("selection", "trials")` -> `--trials`)."""
    for name, field in _FIELDS.items():
        if tuple(where[: len(field)]) == field:
            return "--" + name.replace("_", "-")
    return ".".join(str(part) for part in where)


def eval_options(given: dict[str, Any]) -> EvalOptions:
    """The options eval's parameter values (`given`) set; a bad value is one `error:` line naming
    its flag. A value left out (None) is the model's default: `--max-steps` unset keeps the packs'
    limits. A time limit of 0 is none; a kind list is given as one comma-separated string."""
    fields: dict[str, Any] = {}
    for name, value in given.items():
        if name not in _FIELDS:
            continue
        if name in ("step_timeout", "trial_timeout"):
            value = value or None
        elif value is None:
            continue
        elif name in ("fault_kinds", "user_perturb", "env_perturb"):
            value = [value]
        elif name == "cache":
            value = str(value)
        *groups, field = _FIELDS[name]
        place = fields
        for group in groups:
            place = place.setdefault(group, {})
        place[field] = value
    try:
        return EvalOptions.model_validate(fields)
    except ValidationError as exc:
        fail(OptionsError.of(exc).describe(_flag))


def _suite_settings(ctx: typer.Context, suite: str, given: dict[str, Any]) -> dict[str, Any]:
    """The suite's domains, split and trials, except those given on the command line."""
    from castbench.publish.board import BoardError, board_path, load_board

    try:
        spec = load_board(board_path(suite, Path(".")))
    except BoardError as exc:
        raise typer.BadParameter(str(exc), param_hint="--suite") from exc

    def chosen(name: str, value: Any) -> Any:
        source = ctx.get_parameter_source(name)
        return given[name] if source is not None and source.name not in ("DEFAULT", "ENVIRONMENT") else value

    return {
        "domain": chosen("domain", ",".join(spec.domains)),
        "split": chosen("split", spec.split),
        "trials": chosen("trials", spec.trials),
    }


def _time_limit(what: str) -> Any:
    return typer.Option(
        help=f"Seconds {what} may take (0: no limit); past it the trial ends as timeout.",
        rich_help_panel=_RUN,
    )


def eval_command(
    ctx: typer.Context,
    domain: DomainOption = _SELECTION.domains or "all",
    policy: Annotated[
        str,
        typer.Option(
            help="Built-in name, module:Class import path, or litellm model string.", rich_help_panel=_AGENTS
        ),
    ] = _AGENT.policy,
    critic: Annotated[
        str, typer.Option(help="Critic: none, a built-in, import path or model.", rich_help_panel=_AGENTS)
    ] = _AGENT.critic,
    user: Annotated[
        str, typer.Option(help="User simulator: scripted, import path or model.", rich_help_panel=_AGENTS)
    ] = _AGENT.user,
    split: SplitOption = _SELECTION.split,
    trials: Annotated[
        int, typer.Option(help="Trials per task (n, at most 1000).", rich_help_panel=_RUN)
    ] = _SELECTION.trials,
    seed: Annotated[
        int, typer.Option(help="Run seed; trial seeds derive from it.", rich_help_panel=_RUN)
    ] = _SELECTION.seed,
    tasks: Annotated[str | None, typer.Option(help="Comma-separated task ids.", rich_help_panel=_RUN)] = None,
    tasks_file: Annotated[
        str | None,
        typer.Option(
            help="A private split (`castbench tasks generate`): its domain and tasks instead of --domain "
            "and --split; the run is named by the split's digest.",
            rich_help_panel=_RUN,
        ),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(help="Trials run at once (and model calls in flight per server).", rich_help_panel=_RUN),
    ] = _EXECUTION.concurrency,
    lease: Annotated[
        float,
        typer.Option(
            envvar="CASTBENCH_LEASE_S",
            help="Postgres --db: seconds a silent worker keeps its claimed trials before other "
            "eval processes on the same run take them over.",
            rich_help_panel=_RUN,
        ),
    ] = _EXECUTION.lease_s,
    executor: Annotated[
        str,
        typer.Option(
            help="Where trials run: 'local' (threads in this process) or 'ray' (tasks on a Ray "
            "cluster, pip install 'castbench\\[ray]'; this process still owns the run and the store).",
            rich_help_panel=_RUN,
        ),
    ] = _EXECUTION.executor,
    ray_address: Annotated[
        str | None,
        typer.Option(
            envvar="RAY_ADDRESS",
            help="--executor ray: the cluster to join (HOST:PORT or ray://HOST:PORT); default: a local one.",
            rich_help_panel=_RUN,
        ),
    ] = _EXECUTION.ray_address,
    max_steps: Annotated[
        int | None,
        typer.Option(
            help=f"Agent actions per trial (default {_STEPS}; τ²'s packs default to τ²'s own limits: 200 "
            "messages as τ² counts them, 10 tool errors); given, it replaces the pack's limits.",
            rich_help_panel=_RUN,
        ),
    ] = None,
    step_timeout: Annotated[float, _time_limit("an agent step")] = _LIMITS.step_s or 0,
    trial_timeout: Annotated[float, _time_limit("a trial")] = _LIMITS.trial_s or 0,
    rounds: Annotated[
        int, typer.Option(help="Critic verdicts per step (1 to 10).", rich_help_panel=_LOOP)
    ] = _LOOP_DEFAULTS.rounds,
    on_exhausted: Annotated[
        str, typer.Option(help="When the rounds run out: execute or block.", rich_help_panel=_LOOP)
    ] = _LOOP_DEFAULTS.on_exhausted,
    verify: Annotated[
        str, typer.Option(help="Actions the critic checks: tool_calls, writes or all.", rich_help_panel=_LOOP)
    ] = _LOOP_DEFAULTS.scope,
    paired: Annotated[
        bool,
        typer.Option(
            help="Also run without the critic (same seeds) to measure its effect.", rich_help_panel=_LOOP
        ),
    ] = DEFAULTS.baselines.paired,
    api_base: Annotated[
        str | None,
        typer.Option(
            envvar="CASTBENCH_API_BASE",
            help="OpenAI-compatible server for model roles.",
            rich_help_panel=_MODELS,
        ),
    ] = None,
    models_config: Annotated[
        Path | None,
        typer.Option(
            envvar="CASTBENCH_MODELS_CONFIG",
            help="TOML/JSON per-role model settings.",
            rich_help_panel=_MODELS,
        ),
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(
            envvar="CASTBENCH_CACHE", help="Cache model answers in this directory.", rich_help_panel=_MODELS
        ),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(help="Stop starting trials after this many USD.", rich_help_panel=_MODELS),
    ] = _MODEL.max_cost,
    grading: Annotated[
        str,
        typer.Option(
            help="How required outputs are found: castbench (numbers as numbers, whole words) "
            "or tau (τ-Bench's substring).",
            rich_help_panel=_RUN,
        ),
    ] = DEFAULTS.grading,
    reply_judge: Annotated[
        str | None,
        typer.Option(
            help="A model (provider/model, settings as ?key=value) that decides the reply checks "
            "instead of the rules, at temperature 0 with a seed; the rules' verdicts are kept beside "
            "and its agreement with them reported. Recorded in the run's identity. Not the default.",
            rich_help_panel=_RUN,
        ),
    ] = DEFAULTS.reply_judge,
    add_trials: Annotated[
        int,
        typer.Option(
            help="Top up the stored run with these options by N more trials per task (fresh seeds); "
            "pass^k is re-estimated on all.",
            rich_help_panel=_RUN,
        ),
    ] = _SELECTION.add_trials,
    max_trials: Annotated[
        int, typer.Option(help="Cap on trials per task for --add-trials.", rich_help_panel=_RUN)
    ] = _SELECTION.max_trials,
    allow_incomplete: Annotated[
        bool,
        typer.Option(
            help="Exit 0 even if planned trials are unscored (infrastructure errors, a stopped run).",
            rich_help_panel=_RUN,
        ),
    ] = False,
    counterfactuals: Annotated[
        bool,
        typer.Option(
            "--counterfactuals",
            help="After the run, branch every trial at each critic verdict and play the other verdict "
            "to the end: what each flag and pass did (docs/counterfactuals.md).",
            rich_help_panel=_RUN,
        ),
    ] = False,
    traits: Annotated[
        str | None,
        typer.Option(help="User trait profile, e.g. impatience=high,confusion=low.", rich_help_panel=_AGENTS),
    ] = _AGENT.traits,
    sweep_traits: Annotated[
        str | None,
        typer.Option(
            help="Also run these profiles (';'-separated, e.g. 'impatience=high;confusion=high') and "
            "report each one's pass^k drop against no traits.",
            rich_help_panel=_AGENTS,
        ),
    ] = None,
    tool_faults: Annotated[
        float,
        typer.Option(
            help="Share of tool calls the harness fails, 0 to 1 (seeded per call; a call retried succeeds).",
            rich_help_panel=_PERTURB,
        ),
    ] = DEFAULTS.perturbations.tool_faults,
    fault_kinds: Annotated[
        str,
        typer.Option(
            help="Faults drawn: error, timeout, rate_limit, empty, malformed (comma-separated) or all.",
            rich_help_panel=_PERTURB,
        ),
    ] = "all",
    user_perturb: Annotated[
        str | None,
        typer.Option(
            help="Reword what the user says: paraphrase, reorder, typos (comma-separated) or all.",
            rich_help_panel=_PERTURB,
        ),
    ] = None,
    env_perturb: Annotated[
        str | None,
        typer.Option(
            help="Reshape JSON tool outputs: field_order, extra_fields (comma-separated) or all.",
            rich_help_panel=_PERTURB,
        ),
    ] = None,
    perturb_seed: Annotated[
        int,
        typer.Option(help="Seed of the perturbations' draws.", rich_help_panel=_PERTURB),
    ] = DEFAULTS.perturbations.seed,
    in_process: Annotated[
        bool,
        typer.Option(
            "--in-process",
            help="Run import-path agents inside castbench's process (debugging; recorded in the run, "
            "refused by leaderboards). By default each runs in a worker process of its own.",
            rich_help_panel=_AGENTS,
        ),
    ] = _AGENT.in_process,
    suite: Annotated[
        str | None,
        typer.Option(
            help="A leaderboard board (name under leaderboards/ or a .toml path) whose domains, split and "
            "trials this run uses, e.g. cast-paper; --domain/--split/--trials given too win.",
            rich_help_panel=_RUN,
        ),
    ] = None,
    db: DbOption = _EXECUTION.db,
    tau2_data: Tau2DataOption = None,  # read by the τ² packs from the environment its callback sets
    output: Annotated[
        Path | None,
        typer.Option(help="Write the JSON summary here ('-': to stdout, the tables then go to stderr)."),
    ] = None,
    fresh: Annotated[
        bool, typer.Option(help="Start a new run even if this config was run before.")
    ] = _EXECUTION.fresh,
    details: Annotated[
        bool,
        typer.Option(
            "--details", help="Every table (pass^k for every k, trial facts, the critic's), not the headline."
        ),
    ] = False,
) -> Any:  # the EvalResult (typer resolves the annotations of a command: none that needs the engine)
    """Run every selected task n times and report pass^k. Re-running resumes the same run."""
    given = dict(locals())  # the parameters' values: nothing else is local yet
    # compared by name: typer ships its own copy of click, whose enum is not click's
    sources = [ctx.get_parameter_source(name) for name in ctx.params]
    defaults = all(source is not None and source.name in ("DEFAULT", "ENVIRONMENT") for source in sources)
    if suite is not None:
        given.update(_suite_settings(ctx, suite, given))
    options = eval_options(given)
    console.stderr = output == _STDOUT  # the summary is the output: what a person reads, to stderr
    if output is not None and output != _STDOUT:
        check_writable("--output", output)
    agents, selection = options.agents, options.selection
    what = (
        f"{_tasks_named(selection)}, policy {agents.policy}, "
        f"critic {agents.critic}, user {agents.user}, {selection.trials} trials, seed {selection.seed}"
    )
    intro = "castbench eval on the offline defaults: " if defaults else "castbench eval: "
    console.print(intro + what, markup=False)
    if options.perturbations.active:
        console.print(f"perturbed: {options.perturbations.label()}", markup=False)
    from castbench.domain import ExpectedStateError, TaskFileError  # the domains: once a run is asked for
    from castbench.runner.collector import skip_collection_at_exit

    skip_collection_at_exit()  # before anything the run imports registers its own exit handlers

    try:
        with one_interrupt(), _Display(options) as display:
            result = display.evaluate()
    except (AgentSpecError, TaskFileError, ExpectedStateError, ValueError) as exc:
        fail(exc)
    except ServerDown as exc:  # says which server and how to resume
        fail(exc)
    except InfrastructureError as exc:  # fatal: bad credentials, unknown model
        fail(f"{exc}\nfinished trials are kept; fix it and re-run to resume")
    except RunInterrupted as exc:
        console.print(
            f"[yellow]interrupted:[/] run {exc.run_id} has {exc.stored} of {exc.total} trials stored "
            "(trials in flight were dropped); re-run the same command to resume"
        )
        raise typer.Exit(130) from None
    except KeyboardInterrupt:  # after the trials (the floors, the summary): they are all stored
        console.print(
            "[yellow]interrupted:[/] the trials run so far are stored; re-run the same command to resume"
        )
        raise typer.Exit(130) from None
    _show(options, result, output, allow_incomplete, details)
    if counterfactuals:
        from castbench.cli.counterfactual_cmd import show_counterfactuals

        show_counterfactuals(options.execution.db, result.outcome.run_id)
    return result  # for `castbench profile`, which runs its evaluations through this command


class _Display:
    """The evaluation with a progress bar per run (the run asked for, then any run without the
    critic or with a swept trait profile), and what the console says before each run starts."""

    def __init__(self, options: EvalOptions) -> None:
        self.options = options
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tally]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.label = "trials"
        self.bar: TaskID | None = None
        self.passed = self.ran = self.reused = 0

    def __enter__(self) -> _Display:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)  # type: ignore[arg-type]

    def evaluate(self) -> EvalResult:
        from castbench.api import evaluate  # the engine, store, domains: only once a run is asked for

        return evaluate(
            options=self.options, on_start=self.on_start, on_trial=self.on_trial, on_config=self.on_config
        )

    def on_start(self, already: int, total: int) -> None:
        if already:
            console.print(f"resuming: {already} of {total} trials already stored")
        self.passed = self.ran = 0
        self.reused = already
        self.bar = self.progress.add_task(self.label, total=total, completed=already, tally=self.tally())

    def tally(self) -> str:
        """What the bar counts beside its total: the trials this invocation ran and passed (a
        resume says how many it reused, not "passed 0" for the trials it did not run)."""
        counted = f"passed {self.passed} of {self.ran} run"
        return f"{self.reused} reused, {counted}" if self.reused else counted

    def on_trial(self, record: TrialRecord) -> None:
        self.passed += record.passed
        self.ran += 1
        if self.bar is not None:
            self.progress.update(self.bar, advance=1, tally=self.tally())

    def on_config(self, config: RunConfig, provenance: Provenance) -> None:
        from castbench.records.identity import agent_blind_spots
        from castbench.report.provenance import print_provenance

        profile = ",".join(f"{trait}={level}" for trait, level in config.traits.items())
        self.label = f"trials ({profile})" if profile else "trials"
        if config.critic != self.options.agents.critic:
            self.label += " without the critic"
        print_provenance(provenance, console)
        self._warn_of_traps(provenance)
        roles: tuple[tuple[Role, str], ...] = (
            ("policy", config.policy),
            ("critic", config.critic),
            ("user", config.user),
        )
        for role, spec in roles:
            for blind in agent_blind_spots(role, spec):
                console.print(
                    f"[yellow]note:[/] the {role}'s identity cannot see everything it loads "
                    f"({escape(blind)}): after changing what it loads that way, re-run with --fresh"
                )
        execution = self.options.execution
        if not execution.fresh and sqlite_run_taken(execution.db, config.config_hash()):
            console.print(
                "[yellow]warning:[/] another eval process is running this run on the same SQLite file: "
                "both will compute every trial (the rows stay correct, the work is doubled); stop one, "
                "or use a Postgres --db, where processes share a run's trials"
            )

    def _warn_of_traps(self, provenance: Provenance) -> None:
        """A concurrency capped for worker processes: the option would not do what it says. (A
        cost limit that cannot see a role's spending is said by `castbench.evaluate` itself,
        `castbench.models.costs`, for the API too.)"""
        asked, plan = self.options.execution.concurrency, provenance.execution
        if plan is not None and plan.concurrency < asked:
            console.print(
                f"[yellow]warning:[/] --concurrency {asked} capped at {plan.concurrency}: each trial in "
                "flight holds a worker process of its own, and more than the machine runs only queue"
            )


def _show(
    options: EvalOptions, result: EvalResult, output: Path | None, allow_incomplete: bool, details: bool
) -> None:
    """The run's outcome and summary; exit 1 when trials are unscored (unless allowed)."""
    from castbench.report import print_summary
    from castbench.report.summary import RUN_SUMMARY
    from castbench.report.traits import sweep_table

    outcome, summary = result.outcome, result.summary
    if output == _STDOUT:
        sys.stdout.write(RUN_SUMMARY.dumps(summary, indent=2) + "\n")
        sys.stdout.flush()
    elif output is not None:  # first: a reader that leaves early (`| head`) must not cost the file
        output.write_text(RUN_SUMMARY.dumps(summary, indent=2))
    if outcome.superseded:
        console.print(
            f"[yellow]not resuming {outcome.superseded}[/]: {escape(', '.join(outcome.changes))} changed "
            "since; this is a new run"
        )
    verb = "resumed" if outcome.resumed else "stored"
    console.print(
        f"run {outcome.run_id} {verb} in {options.execution.db} ({outcome.ran} trials run, "
        f"{outcome.already_done} reused)",
        markup=False,
    )
    if outcome.broken is not None:  # tables of zeros would only hide the one thing to fix
        fail(
            f"the agent failed all {outcome.ran} trial(s) it ran the same way (agent_error): "
            f"{outcome.broken} (castbench runs show {outcome.run_id} for the trials)",
            code=AGENT_BROKEN,
        )
    if options.selection.add_trials:
        console.print(
            f"topped up to {summary.config.trials} trials per task (cap {options.selection.max_trials})"
        )
    print_summary(summary, console, details)
    if summary.trait_sweep is not None:
        console.print(sweep_table(summary.trait_sweep))
    if outcome.stopped:
        console.print(f"[yellow]stopped:[/] {escape(outcome.stopped)}; re-run the same command to resume")
    if output is not None and output != _STDOUT:
        console.print(f"summary written to {output}", markup=False)
    if summary.status != "complete" and not allow_incomplete:
        fail(
            f"run {outcome.run_id} {summary.status}: {summary.overall.unscored_trials} planned trial(s) "
            f"unscored{_unscored_why(options, outcome.run_id)}; re-run the same command to retry them "
            "(--allow-incomplete to exit 0 anyway)",
            code=1,
        )


def _unscored_why(options: EvalOptions, run_id: str) -> str:
    """`, 2 for: <the most common reason>`: why the run's unscored trials are so (a slow model
    server, one that kept failing), so the one line that ends the command says what to fix."""
    from castbench.store import ResultsStore, StoreError

    try:
        records = ResultsStore(options.execution.db, read_only=True).trials(run_id)
    except StoreError:  # the count alone still says the run is incomplete
        return ""
    reasons = Counter(
        (record.error or record.end_reason).removeprefix("the run stopped in this trial: ").splitlines()[0]
        for record in records
        if record.status != "scored"
    )
    if not reasons:
        return ""
    reason, count = reasons.most_common(1)[0]
    return f", {count} for: {reason[:400]}"
