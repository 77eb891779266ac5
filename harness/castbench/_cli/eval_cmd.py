"""`castbench eval`: run (or resume) an evaluation, show pass^k tables, store everything.

The flags are `castbench._run.options.EvalOptions` on the command line, declared once beside its fields
(`castbench._cli.eval_flags` builds them): each sets a field, its default is the model's, and the
model's checks are the flags' checks, a bad value one `error:` line naming the flag. The command's
own options (`--suite`, `--output`, `--allow-incomplete`, `--counterfactuals`, `--details`) say
what to show. The evaluation itself, with its paired run and trait sweep, is
`castbench.evaluate`'s; this module shows it (`show_evaluation`, which `castbench profile` uses
for each of its runs).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
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

from castbench._agents.registry import AgentSpecError, Role
from castbench._base.errors import InfrastructureError, RunInterrupted, ServerDown
from castbench._cli.checks import check_folder, check_writable, sqlite_run_taken
from castbench._cli.errors import AGENT_BROKEN, fail
from castbench._cli.eval_flags import flag_values, options_of, with_eval_flags
from castbench._cli.interrupts import one_interrupt
from castbench._cli.options import PackOptionFlag, Tau2DataOption
from castbench._run.options import EvalOptions, TaskSelection

if TYPE_CHECKING:
    from castbench._records.config import RunConfig
    from castbench._records.provenance import Provenance
    from castbench._records.trial import TrialRecord
    from castbench._run.api import EvalResult

__all__ = ["console", "eval_command", "given_options", "show_evaluation"]

console = Console()
_STDOUT = Path("-")
"""`--output -`: the JSON summary on stdout (not a file named `-`)."""
_RUN = "Run"


def _tasks_named(selection: TaskSelection) -> str:
    if selection.tasks_file is not None:
        return f"the private split in {selection.tasks_file}"
    return f"domains {selection.domains} ({selection.split} split)"


def _suite_settings(ctx: typer.Context, suite: str, given: dict[str, Any]) -> dict[str, Any]:
    """The suite's domains, split and trials, except those given on the command line."""
    from castbench._results.publish.board import BoardError, board_path, load_board

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


def given_options(ctx: typer.Context, suite: str | None) -> EvalOptions:
    """The options the command's eval flags (and `--suite`'s board) ask for."""
    given = flag_values(ctx)
    if suite is not None:
        given.update(_suite_settings(ctx, suite, given))
    return options_of(given)


def _at_defaults(ctx: typer.Context) -> bool:
    # compared by name: typer ships its own copy of click, whose enum is not click's
    sources = [ctx.get_parameter_source(name) for name in ctx.params]
    return all(source is not None and source.name in ("DEFAULT", "ENVIRONMENT") for source in sources)


def show_evaluation(
    ctx: typer.Context,
    options: EvalOptions,
    *,
    output: Path | None = None,
    allow_incomplete: bool = False,
    counterfactuals: bool = False,
    details: bool = False,
) -> EvalResult:
    """`castbench.evaluate(options)` with what the command shows: the run asked for, a progress
    bar per run, its summary tables (and `--output` JSON); exit 1 when trials are unscored (unless
    `allow_incomplete`), 2 on bad input, 130 when interrupted."""
    console.stderr = output == _STDOUT  # the summary is the output: what a person reads, to stderr
    if output is not None and output != _STDOUT:
        check_writable("--output", output)
    if options.models.cache_dir:
        check_folder("--cache", Path(options.models.cache_dir))
    agents, selection = options.agents, options.selection
    what = (
        f"{_tasks_named(selection)}, policy {agents.policy}, "
        f"critic {agents.critic}, user {agents.user}, {selection.trials} trials, seed {selection.seed}"
    )
    intro = "castbench eval on the offline defaults: " if _at_defaults(ctx) else "castbench eval: "
    console.print(intro + what, markup=False)
    if options.perturbations.active:
        console.print(f"perturbed: {options.perturbations.label()}", markup=False)
    from castbench._domain.domain import ExpectedStateError
    from castbench._domain.task import TaskFileError
    from castbench._run.collector import skip_collection_at_exit

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
        figures = _analysis("counterfactuals")(options.execution.db, result.outcome.run_id)
        if output is not None and output != _STDOUT:  # every figure the screen shows is in the file
            document = json.loads(output.read_text())
            document["counterfactuals"] = figures
            output.write_text(json.dumps(document, indent=2))
    return result


def _analysis(name: str) -> Callable[[str, str], dict[str, Any]]:
    """An analysis run after the evaluation, from the `castbench.analyses` entry points (the
    castbench_analyses satellite, in castbench's wheel)."""
    for point in entry_points(group="castbench.analyses", name=name):
        show: Callable[[str, str], dict[str, Any]] = point.load()
        return show
    fail(f"--{name} needs the castbench_analyses package (it ships with castbench: reinstall castbench)")


SuiteOption = Annotated[
    str | None,
    typer.Option(
        help="A leaderboard board (name under leaderboards/ or a .toml path) whose domains, split and "
        "trials this run uses, e.g. cast-paper; --domain/--split/--trials given too win.",
        rich_help_panel=_RUN,
    ),
]
AllowIncompleteOption = Annotated[
    bool,
    typer.Option(
        help="Exit 0 even if planned trials are unscored (infrastructure errors, a stopped run).",
        rich_help_panel=_RUN,
    ),
]
CounterfactualsOption = Annotated[
    bool,
    typer.Option(
        "--counterfactuals",
        help="After the run, branch every trial at each critic verdict and play the other verdict "
        "to the end: what each flag and pass did (docs/counterfactuals.md).",
        rich_help_panel=_RUN,
    ),
]
DetailsOption = Annotated[
    bool,
    typer.Option(
        "--details", help="Every table (pass^k for every k, trial facts, the critic's), not the headline."
    ),
]
"""The options `eval` and `profile` share besides the eval flags: what to show, not what to run."""


def _eval(
    ctx: typer.Context,
    allow_incomplete: AllowIncompleteOption = False,
    counterfactuals: CounterfactualsOption = False,
    suite: SuiteOption = None,
    pack_option: PackOptionFlag = None,  # applied as parsed, before any pack loads
    tau2_data: Tau2DataOption = None,  # deprecated: --pack-option tau2.data=DIR
    output: Annotated[
        Path | None,
        typer.Option(help="Write the JSON summary here ('-': to stdout, the tables then go to stderr)."),
    ] = None,
    details: DetailsOption = False,
) -> None:
    """Run every selected task n times and report pass^k. Re-running resumes the same run."""
    show_evaluation(
        ctx,
        given_options(ctx, suite),
        output=output,
        allow_incomplete=allow_incomplete,
        counterfactuals=counterfactuals,
        details=details,
    )


eval_command = with_eval_flags(_eval)
"""`castbench eval`: `_eval`'s options and every eval flag (`castbench._cli.eval_flags`)."""


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
        from castbench._run.api import evaluate  # the engine, store, domains: only once a run is asked for

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
        from castbench._records.identity import agent_blind_spots
        from castbench._results.report.provenance import print_provenance

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
        `castbench._agents.models.costs`, for the API too.)"""
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
    from castbench._results.report.summary import RUN_SUMMARY
    from castbench._results.report.tables import print_summary
    from castbench._results.report.traits import sweep_table

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
    from castbench._records.store.connect import db_url
    from castbench._records.store.store import in_memory_url

    in_memory = in_memory_url(db_url(options.execution.db))
    verb = "resumed" if outcome.resumed else "stored"
    console.print(
        f"run {outcome.run_id} {verb} in {options.execution.db} ({outcome.ran} trials run, "
        f"{outcome.already_done} reused)"
        + (", kept in memory only: gone when this command ends" if in_memory else ""),
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
    from castbench._records.store import ResultsStore, StoreError

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
