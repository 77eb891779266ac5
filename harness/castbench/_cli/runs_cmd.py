"""`castbench runs list|show`: what the store holds."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from castbench._base.defaults import DEFAULT_DB
from castbench._cli.errors import fail
from castbench._cli.options import DbOption, add_plugin_commands

if TYPE_CHECKING:  # each command imports what it runs on (`castbench runs --help` loads no store)
    from castbench._records.store import ResultsStore
    from castbench._records.trial import TrialRecord
    from castbench._results.report.summary import RunSummary

runs_app = typer.Typer(help="Stored runs.", no_args_is_help=True)
console = Console()


@runs_app.command("list")
def list_runs(
    db: DbOption = DEFAULT_DB,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array, for scripts.")] = False,
) -> None:
    """Every stored run, one line each: id, when, status, domains, policy, critic and trials
    stored (`--json` adds the user, seed and provenance: where each role's agent ran). Full run
    ids; any unique prefix of one is accepted wherever a run is named."""
    from castbench._records.store import ResultsStore
    from castbench._results.report.runs import run_listing

    runs = run_listing(ResultsStore(db, read_only=True))
    if as_json:
        print(json.dumps(runs, indent=2))
        return
    console.print(runs_table(runs, escape(f"runs in {db}"), console.width))


def middle_cut(name: str, width: int) -> str:
    """`name` in `width` characters, cut in the middle when longer: its start (the module, the
    provider) and its end (the class, the build) both stay, which is what tells two runs apart
    (`cancelbot:CancelBotV1` and `...V2` cut at the end looked the same)."""
    if len(name) <= width or width < 5:
        return name
    head = (width - 1) // 2
    return f"{name[:head]}…{name[len(name) - (width - 1 - head) :]}"


def runs_table(runs: list[dict[str, Any]], title: str, width: int) -> Table:
    """One line per run in `width` columns (80 and up): the id, date, status and count whole, the
    names cut with an ellipsis to share what is left, and the provenance (run here or submitted;
    where each role's agent ran) where the names leave room for it (`runs show` and `--json`
    always have it, and the names whole)."""
    from castbench._records.provenance import Provenance

    names = [(",".join(run["domains"]), run["policy"], run["critic"]) for run in runs]
    fixed = {
        "run": max((len(run["id"]) for run in runs), default=3),
        "created": 11,
        "status": max((len(run["status"]) for run in runs), default=6),
        "trials": 6,
    }
    room = max(18, width - sum(fixed.values()) - 2 * 6)  # two spaces between the seven columns
    headers = ("domains", "policy", "critic")
    longest = [max([len(headers[i])] + [len(row[i]) for row in names]) for i in range(3)]
    domains = min(longest[0], max(7, room // 4))
    critic = min(longest[2], max(6, room // 4))
    policy = max(6, room - domains - critic)
    spare = room - sum(longest) - 2
    table = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold")
    table.add_column("run", no_wrap=True, min_width=fixed["run"])
    table.add_column("created", no_wrap=True, width=fixed["created"])
    table.add_column("status", no_wrap=True, width=fixed["status"])
    for column, size in zip(headers, (domains, policy, critic), strict=True):
        table.add_column(column, no_wrap=True, overflow="ellipsis", max_width=size)
    table.add_column("trials", no_wrap=True, justify="right", width=fixed["trials"])
    if spare >= 16:
        table.add_column("provenance", no_wrap=True, overflow="ellipsis", max_width=spare)
    sizes = (domains, policy, critic)
    for run, row in zip(runs, names, strict=True):
        described = run.get("problem") or Provenance.model_validate(run["provenance"]).short()
        shown = [escape(described)] if spare >= 16 else []
        table.add_row(
            run["id"],
            run["created"][5:16].replace("T", " "),
            run["status"],
            *[escape(middle_cut(value, size)) for value, size in zip(row, sizes, strict=True)],
            str(run["trials_stored"]),
            *shown,
        )
    return table


def print_workers(store: ResultsStore, run_id: str) -> None:
    """The processes that worked on a run in a shared (Postgres) store, with their progress."""
    if not store.shared:  # workers share Postgres stores only
        return
    from castbench._records.store.leases import workers

    status = workers(store.db, run_id)
    if not status:
        return
    table = Table(title=f"workers of {run_id}", title_justify="left")
    for column in ("worker", "host", "pid", "started", "state", "trials stored", "running now"):
        table.add_column(column)
    for worker in status:
        started = worker.started.strftime("%Y-%m-%d %H:%M:%S")
        state = {"silent": "[red]silent[/] (presumed dead)", "live": "[green]live[/]"}.get(
            worker.state, worker.state
        )
        table.add_row(
            escape(worker.id),
            escape(worker.host),
            str(worker.pid),
            started,
            state,
            str(worker.trials_done),
            str(worker.running),
        )
    console.print(table)


@runs_app.command("show")
def show_run(
    run: Annotated[str, typer.Argument(help="Run id, a unique prefix of it, or 'latest'.")],
    task: Annotated[str | None, typer.Option(help="Show this task's trials step by step.")] = None,
    trial: Annotated[int | None, typer.Option(help="With --task: only this trial index.")] = None,
    failures: Annotated[int, typer.Option(min=0, help="How many failed trials to show with their diff.")] = 3,
    details: Annotated[
        bool, typer.Option("--details", help="Every table: pass^k for every k, trial facts, each task.")
    ] = False,
    db: DbOption = DEFAULT_DB,
) -> None:
    """The headline figures, the tasks that failed most, then failures with their state diff (or
    one task's trials in full); `--details` for every table."""
    from castbench._records.provenance import provenance
    from castbench._records.store import ResultsStore
    from castbench._results.report.provenance import print_provenance
    from castbench._results.report.summary import summarize_run
    from castbench._results.report.tables import print_summary, print_trial

    store = ResultsStore(db, read_only=True)
    row = store.run(run)
    config = store.config(row.id)
    if task is not None:  # the task's trials alone are read, however many the run has
        chosen = store.trials(row.id, task_id=task, trial_index=trial)
        if not chosen:
            fail(f"run {row.id} has no trials of task '{task}'")
        for record in chosen:
            print_trial(record, console)
        return
    seen = _Noted(failures, marks=details, faults=config.perturbations.active)
    # one pass over the stored records: what is printed besides the summary is noted as the
    # summary reads each record, so no second list of the run is built (issue 40)
    summary = summarize_run(row.id, config, seen.watch(store.iter_trials(row.id)), row.status)
    print_provenance(provenance(config, json.loads(row.meta_json)), console)
    versions = ", ".join(f"{name} {version}" for name, version in config.domains.items())
    console.print(f"domains: {versions}; limits: {config.limits.describe()}", markup=False)
    for name, origin in config.extra.get("data", {}).items():  # a pack's data not its own (tau2.data)
        console.print(f"{name} data: {origin}", markup=False)
    if config.perturbations.active:
        label = config.perturbations.label()
        console.print(f"perturbed: {label}; {seen.faults} tool fault(s) injected", markup=False)
    print_summary(summary, console, details)
    print_workers(store, row.id)
    if details:
        _print_per_task(summary, seen.marks)
    else:
        console.print(escape(_per_task_line(summary)), markup=False)
    _print_errors(seen.errored, seen.errors)
    for record in seen.failed:
        print_trial(record, console)


class _Noted:
    """What `runs show` prints of single records, noted one record at a time: the first `failures`
    failed trials, the first errored ones (and how many there are), each task's pass marks with
    `marks`, the injected tool faults with `faults`. Holds those, never the run."""

    def __init__(self, failures: int, *, marks: bool, faults: bool, errors_shown: int = 20) -> None:
        self.failures, self.errors_shown = failures, errors_shown
        self.failed: list[TrialRecord] = []
        self.errored: list[TrialRecord] = []
        self.errors = 0
        self.marks: dict[tuple[str, str], list[str]] | None = defaultdict(list) if marks else None
        self.count_faults = faults
        self.faults = 0

    def note(self, record: TrialRecord) -> None:
        if not record.passed and len(self.failed) < self.failures:
            self.failed.append(record)
        if record.error is not None:
            self.errors += 1
            if len(self.errored) < self.errors_shown:
                self.errored.append(record)
        if self.marks is not None:
            self.marks[record.domain, record.task_id].append("[green]●[/]" if record.passed else "[red]●[/]")
        if self.count_faults:
            self.faults += sum(step.fault is not None for step in record.steps)

    def watch(self, records: Iterable[TrialRecord]) -> Iterator[TrialRecord]:
        """`records`, each noted as it passes."""
        for record in records:
            self.note(record)
            yield record


def _per_task_line(summary: RunSummary, shown: int = 5) -> str:
    """The tasks in one line: how many passed every trial, and the ones that failed most."""
    reports = summary.domains.values()
    outcomes = [(task, outcome) for report in reports for task, outcome in report.per_task.items()]
    always = sum(outcome.successes == outcome.n for _, outcome in outcomes)
    failing = [(task, outcome) for task, outcome in outcomes if outcome.successes < outcome.n]
    worst = sorted(failing, key=lambda found: (found[1].successes / found[1].n, found[0]))
    line = f"per task: {always} of {len(outcomes)} passed every trial"
    if worst:
        line += "; failed most: " + ", ".join(f"{task} {o.successes}/{o.n}" for task, o in worst[:shown])
        if len(worst) > shown:
            line += f" and {len(worst) - shown} more"
    return line


def _print_per_task(summary: RunSummary, marks: dict[tuple[str, str], list[str]] | None) -> None:
    per_task = Table(title="per task", title_justify="left")
    for column in ("domain", "task", "successes", "trials"):
        per_task.add_column(column, overflow="fold")  # a long task id or many trials: folded, not cut
    for domain, report in summary.domains.items():
        for task_id, outcome in report.per_task.items():
            shown = "".join((marks or {}).get((domain, task_id), ()))
            per_task.add_row(domain, task_id, f"{outcome.successes}/{outcome.n}", shown)
    console.print(per_task)


def _print_errors(errored: list[TrialRecord], count: int) -> None:
    """Trials that ended in an error or a timeout (the first of `count`), with the first line of
    their reason."""
    if not count:
        return
    console.print(f"[bold]trials that ended in an error ({count})[/]")
    for record in errored:
        reason = escape((record.error or "").splitlines()[0])
        where = escape(f"{record.domain} {record.task_id} #{record.trial_index}")
        console.print(f"  {where} [red]{record.end_reason}[/]: {reason}", soft_wrap=True)
    if count > len(errored):
        console.print(f"  ... and {count - len(errored)} more (see --task)")


add_plugin_commands({"runs": runs_app})  # `runs why` (castbench_analyses)
