"""`castbench leaderboard build BOARD`: a board folder from the exported runs it lists."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from castbench._cli.errors import fail

if TYPE_CHECKING:  # a board's machinery loads when one is built, not for `--help`
    from castbench._records.store.export import ExportedRun
    from castbench._results.publish.board import Entry

leaderboard_app = typer.Typer(help="Leaderboards built from exported runs.", no_args_is_help=True)
console = Console()


@leaderboard_app.command("build")
def build(
    board: Annotated[
        str, typer.Argument(help="Board name (leaderboards/NAME.toml) or path to its TOML file.")
    ],
    root: Annotated[Path, typer.Option(help="Folder holding leaderboards/ and results/.")] = Path("."),
    out: Annotated[Path | None, typer.Option(help="Output folder \\[default: leaderboards/NAME/].")] = None,
    rerun: Annotated[
        bool,
        typer.Option(
            help="First re-create the entries' runs offline with their fixed seeds and export them; "
            "only these rows are marked re-run (the others are submitted)."
        ),
    ] = False,
    verify: Annotated[
        bool,
        typer.Option(help="Re-execute and re-grade every run's trials; refuse a run that differs."),
    ] = True,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Rank incomplete or failed runs, or runs that differ in what they measured, anyway.",
        ),
    ] = False,
) -> None:
    """Write board.md, board.csv, board.json, index.html, curve.svg and one trajectory page per entry."""
    from castbench._results.publish.board import BoardError, board_path, load_board
    from castbench_boards.build import build_board
    from castbench_boards.rerun import rerun_entries

    path = board_path(board, root)
    try:
        spec = load_board(path)
        _check_out_folder(out or path.parent / spec.name)
        reruns: dict[str, ExportedRun] = {}
        if rerun:

            def report(entry: Entry, file: Path, size: int) -> None:
                console.print(f"re-ran {entry.name}: {file} ({size / 1024:.0f} KiB)", markup=False)

            reruns = rerun_entries(spec, root, on_entry=report)
        target = out or path.parent / spec.name
        written = build_board(
            spec,
            root,
            target,
            verify=verify,
            force=force,
            on_warning=lambda text: console.print(f"warning (forced): {escape(text)}"),
            reruns=reruns,
        )
    except BoardError as exc:
        fail(exc)
    console.print(f"board {spec.name}: {len(written)} files written to {target}", markup=False)


def _check_out_folder(target: Path) -> None:
    """The board's folder can be made and written, checked before minutes of building."""
    if target.exists() and not target.is_dir():
        fail(f"--out {target}: is a file; a board is written to a folder (give a folder path)")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out {target}: cannot be made ({exc.strerror or exc}); choose a writable folder")
    if not os.access(target, os.W_OK):
        fail(f"--out {target}: is read-only; choose a writable folder")
