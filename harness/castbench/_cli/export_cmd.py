"""`castbench export RUN`, `castbench import FILE` and `castbench verify RUN|FILE`: runs as
portable files, checked by re-execution before they are trusted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from castbench._base.defaults import DEFAULT_DB, EXPORT_SUFFIX
from castbench._cli.errors import fail
from castbench._cli.options import DbOption, PackOptionFlag, Tau2DataOption

if TYPE_CHECKING:  # the store and the formats load when a command runs, not for `--help`
    from castbench._records.store.export import ExportedRun

console = Console()


def _registered(name: str) -> tuple[str, Callable[[ExportedRun, Path], int]]:
    """A format registered under `castbench.formats`: its default suffix and writer."""
    from castbench._records.store.export import load_format

    run_format = load_format(name)
    return run_format.suffix, run_format.write


def export_command(
    run: Annotated[str, typer.Argument(help="Run id, unique prefix, or 'latest'.")],
    out: Annotated[
        Path | None,
        typer.Option(help=f"File to write \\[default: results/RUN_ID{EXPORT_SUFFIX}, or .eval for inspect]."),
    ] = None,
    db: DbOption = DEFAULT_DB,
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="castbench: the portable run (import, verify, boards); inspect: an Inspect AI eval "
            "log (.eval or .json) for `inspect view` (extra [bridges]); tau2: τ²-bench's Results JSON "
            "for a run of a tau2-* pack (extra [tau2]).",
        ),
    ] = "castbench",
    pack_option: PackOptionFlag = None,  # applied as parsed, before any pack loads
    tau2_data: Tau2DataOption = None,  # deprecated: --pack-option tau2.data=DIR
) -> None:
    """Write a run (config, meta and every trial record) as one compressed, portable file, or in
    a registered format: an Inspect AI eval log (`--format inspect`, docs/inspect.md) or τ²-bench's
    Results JSON (`--format tau2`)."""
    from castbench._base.places import record_place
    from castbench._records.store import ResultsStore
    from castbench._records.store.export import ArchiveError, stream_run, write_export

    try:
        suffix, writer = (EXPORT_SUFFIX, write_export) if format == "castbench" else _registered(format)
        # the trials stay in the store: the writer reads them one at a time (#59)
        exported = stream_run(ResultsStore(db, read_only=True), run)
        target = out or Path("results") / f"{exported.run_id}{suffix}"
        size = writer(exported, target)
        record_place(target)  # whatever its format: no agent's sandbox reaches it
    except ArchiveError as exc:
        fail(exc)
    console.print(
        f"run {exported.run_id}: {len(exported.trials)} trials → {target} ({size / 1024:.0f} KiB)",
        markup=False,
    )


VerifyOption = Annotated[
    bool,
    typer.Option(help="Re-execute and re-grade every trial first; refuse the run if any differs."),
]


def import_command(
    file: Annotated[
        Path,
        typer.Argument(
            help=f"An exported run (*{EXPORT_SUFFIX}), τ²-bench's Results JSON or τ-bench's results "
            "JSON (*.json, told apart by their content; replayed and graded here)."
        ),
    ],
    db: DbOption = DEFAULT_DB,
    verify: VerifyOption = True,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Import a run refused as clairvoyant (agents acting on identifiers nobody revealed), "
            "marked as such.",
        ),
    ] = False,
    pack_option: PackOptionFlag = None,  # applied as parsed, before any pack loads
    tau2_data: Tau2DataOption = None,  # deprecated: --pack-option tau2.data=DIR
) -> None:
    """Load an exported run into a database, after verifying it; importing it again adds nothing.
    The run is recorded as submitted from FILE (never as run here, whatever the file says)."""
    from castbench._records.store import ResultsStore
    from castbench._records.store.export import ArchiveError, format_names, is_export, read_export, reader_for
    from castbench._results.publish.archive import import_run

    try:
        reader = read_export if is_export(file) else reader_for(file)
        if reader is None:
            fail(
                f"{file}: not an exported run (*{EXPORT_SUFFIX}) nor a file any registered format reads "
                f"(formats: {', '.join(format_names())}; .json: τ²'s Results, an object, or τ-bench's "
                "results, a list of {task_id, trial, reward, info, traj}, each with its extra installed)"
            )
        exported = reader(file)
        outcome = import_run(ResultsStore(db), exported, verify=verify, source=file.name, force=force)
    except (ArchiveError, ImportError) as exc:  # ImportError: the format's extra is not installed
        fail(exc)
    verb = "created" if outcome.created_run else "already present,"
    stored = outcome.created_run or outcome.added_trials
    marked = f"; recorded as submitted from {file.name}" if stored else ""
    console.print(
        f"run {outcome.run_id} {verb} in {db}: {outcome.added_trials} trials added, "
        f"{outcome.already_present} already there{marked}",
        markup=False,
    )
    if isinstance(exported.meta.get("agreement"), dict):
        _print_agreement(exported.meta["agreement"], len(exported.trials))
    if outcome.clairvoyant_allowed:
        console.print(
            f"{outcome.clairvoyant_allowed} passing trials act on identifiers nobody revealed "
            "(allowed: the run's agents declared privilege)",
            markup=False,
        )
    if outcome.clairvoyant:
        console.print(
            f"marked clairvoyant ({len(outcome.clairvoyant)} trials): " + "; ".join(outcome.clairvoyant[:3]),
            markup=False,
        )


def _print_agreement(table: dict[str, dict[str, Any]], trials: int) -> None:
    """The imported file's recorded reward beside castbench's gradings: agree/disagree per grading,
    then every disagreement (`task#trial`)."""
    out = Table(title=f"agreement with the recorded reward ({trials} trials)")
    for column in ("grading", "agree", "disagree", "passes τ failed", "fails τ passed"):
        out.add_column(column, justify="left" if column == "grading" else "right")
    for grading, row in table.items():
        extra, missed = row.get("passed_tau_failed", []), row.get("failed_tau_passed", [])
        out.add_row(
            grading, str(row.get("agree")), str(row.get("disagree")), str(len(extra)), str(len(missed))
        )
    console.print(out)
    for grading, row in table.items():
        for kind, key in (
            ("passes, τ failed", "passed_tau_failed"),
            ("fails, τ passed", "failed_tau_passed"),
        ):
            listed = row.get(key, [])
            if listed:
                console.print(
                    f"{grading}: {kind}: {', '.join(map(str, listed))}", markup=False, soft_wrap=True
                )


def verify_command(
    run: Annotated[
        str,
        typer.Argument(help=f"Run id, unique prefix, 'latest', or an exported run file (*{EXPORT_SUFFIX})."),
    ],
    db: DbOption = DEFAULT_DB,
) -> None:
    """Replay every stored trial's tool calls in a fresh sandbox, grade it again with the run's
    grading mode, and compare with the stored reward, trajectory and labels; check the config
    hash and privilege markers. Exit 1 on any difference; exit 2 when agents that declared no
    privilege acted on identifiers the conversation never revealed (clairvoyant trials)."""
    from castbench._records.store.export import ArchiveError
    from castbench._results.decide import verify

    try:
        report = verify(run, db=db)
    except ArchiveError as exc:
        fail(exc)
    if not report.verified:
        console.print(f"[bold red]verification failed:[/] {escape(report.describe())}")
        raise typer.Exit(1)
    if report.clairvoyant:
        console.print(f"[bold red]refused as clairvoyant:[/] {escape(report.describe())}")
        raise typer.Exit(2)
    console.print(report.describe(), markup=False)
