"""`castbench view RUN`: a self-contained HTML page of a run's trajectories."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.console import Console

from castbench._base.defaults import DEFAULT_DB
from castbench._cli.checks import check_writable
from castbench._cli.errors import fail
from castbench._cli.options import DbOption

console = Console()


def _write_page(run: str, db: str, out: TextIO) -> str:
    """Write the page of a run in the store or an exported run file to `out`; the run's id. A
    stored run's trials are read one at a time as the page is written (#59)."""
    from castbench._records.store import ResultsStore
    from castbench._records.store.export import is_export, read_export
    from castbench_boards.viewer import render_run_page, write_run_page

    if is_export(Path(run)):
        exported = read_export(Path(run))
        out.write(render_run_page(exported.run_id, exported.config, exported.trials))
        return exported.run_id
    from castbench_analyses.counterfactual_report import stored_branches

    store = ResultsStore(db, read_only=True)
    row = store.run(run)
    config = store.config(row.id)
    branches = stored_branches(store, row.id, config)  # kept by `castbench counterfactuals RUN`
    write_run_page(out, row.id, config, store.iter_trials(row.id), branches=branches)
    return row.id


def view_command(
    run: Annotated[str, typer.Argument(help="Run id, unique prefix, 'latest', or an exported run file.")],
    out: Annotated[Path | None, typer.Option(help="Write the page here \\[default: RUN_ID.html].")] = None,
    serve: Annotated[bool, typer.Option(help="Serve the page on 127.0.0.1 instead of writing it.")] = False,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port for --serve (0: any free port).")] = 8765,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Tasks with their trials as pass/fail marks; click one for its conversation step by step,
    the critic's verdicts, the labels and the final state diff."""
    from castbench._records.store import StoreError
    from castbench._records.store.export import ArchiveError
    from castbench_boards.viewer import page_server

    if out is not None and not serve:
        check_writable("--out", out)
    if serve:
        held = io.StringIO()
        try:
            run_id = _write_page(run, db, held)
        except (StoreError, ArchiveError) as exc:
            fail(exc)
        html = held.getvalue()
        try:
            server = page_server(html, port)
        except OSError as exc:  # the port is taken (or not ours to take): the user's to change
            fail(
                f"--port {port}: cannot serve on 127.0.0.1:{port} ({exc.strerror or exc}); "
                "pick another port, or --port 0 for any free one"
            )
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        console.print(f"serving run {run_id} at {url} (Ctrl-C to stop)", markup=False)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
        return
    # the page is written beside its place and named once whole: RUN_ID.html needs the id first
    where = (out or Path("page.html")).parent
    where.mkdir(parents=True, exist_ok=True)
    partial = where / f".castbench-view-{os.getpid()}.html.part"
    whole = False
    try:
        with partial.open("w", encoding="utf-8") as page:
            run_id = _write_page(run, db, page)
        whole = True
    except (StoreError, ArchiveError) as exc:
        fail(exc)
    finally:
        if not whole:
            partial.unlink(missing_ok=True)
    target = out or Path(f"{run_id}.html")
    partial.replace(target)
    console.print(f"run {run_id}: {target} ({target.stat().st_size / 1024:.0f} KiB)", markup=False)


def _view() -> Any:
    """`view_command` as the CLI lists it: its help cut short in `castbench --help`, as before."""
    single = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode="rich")
    single.command(
        "view",
        short_help="Tasks with their trials as pass/fail marks; click one for its conversation step by "
        "step, ...",
    )(view_command)
    return typer.main.get_command(single)


view = _view()
"""The command the `castbench.commands` entry point names (`castbench view`)."""
