"""`castbench export RUN` and `castbench import FILE`: runs as portable files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from castbench.cli.errors import fail
from castbench.cli.options import DbOption
from castbench.publish.archive import (
    EXPORT_SUFFIX,
    ArchiveError,
    export_run,
    import_run,
    read_export,
    write_export,
)
from castbench.store import DEFAULT_DB, ResultsStore

console = Console()


def export_command(
    run: Annotated[str, typer.Argument(help="Run id, unique prefix, or 'latest'.")],
    out: Annotated[
        Path | None, typer.Option(help=f"File to write [default: results/RUN_ID{EXPORT_SUFFIX}].")
    ] = None,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Write a run (config, meta and every trial record) as one compressed, portable file."""
    try:
        exported = export_run(ResultsStore(db), run)
    except ArchiveError as exc:
        fail(exc)
    target = out or Path("results") / f"{exported.run_id}{EXPORT_SUFFIX}"
    size = write_export(exported, target)
    console.print(
        f"run {exported.run_id}: {len(exported.trials)} trials → {target} ({size / 1024:.0f} KiB)",
        markup=False,
    )


def import_command(
    file: Annotated[Path, typer.Argument(help=f"An exported run (*{EXPORT_SUFFIX}).")],
    db: DbOption = DEFAULT_DB,
) -> None:
    """Load an exported run into a database; importing it again adds nothing."""
    try:
        outcome = import_run(ResultsStore(db), read_export(file))
    except ArchiveError as exc:
        fail(exc)
    verb = "created" if outcome.created_run else "already present,"
    console.print(
        f"run {outcome.run_id} {verb} in {db}: {outcome.added_trials} trials added, "
        f"{outcome.already_present} already there",
        markup=False,
    )
