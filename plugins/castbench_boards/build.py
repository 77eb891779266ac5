"""`castbench leaderboard build`: exported runs in, a board folder out.

    leaderboards/<board>/board.json   the rows as data
    leaderboards/<board>/board.csv
    leaderboards/<board>/board.md     paste into a README
    leaderboards/<board>/index.html   sortable table + pass^k curve, no external resources
    leaderboards/<board>/curve.svg
    leaderboards/<board>/runs/<entry>.html   each entry's trajectories (the viewer): its task table
    leaderboards/<board>/runs/<entry>/trials-NNN.js   the trajectories, a chunk of trials each,
                                              loaded when one of their trials is opened

No HTML page is larger than `castbench_boards.viewer.PAGE_LIMIT` (1 MB): a board whose run page would be
is refused, naming the page, rather than published at a size browsers and git histories carry
badly; the trajectories are in chunk files of at most ~0.7 MB (a single trial larger than that
is a chunk alone).

Everything is derived from the exports the board lists, so a committed board can be checked
against its committed runs by building again and comparing bytes. Each export is verified first
(every trial re-executed and re-graded, `_results/publish/verify.py`): one that does not verify is an
error for a declared entry, and excluded, with the reason, from a board of discovered runs.
Rows re-created by this build (`--rerun`) are marked `re-run`; every other row is `submitted`,
whatever its file claims (see `_results/publish/board.py` for `require_rerun` and `allow_unsandboxed`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from castbench._records.store.export import EXPORT_SUFFIX, ArchiveError, ExportedRun, read_export
from castbench._results.compare.comparability import setting_differences
from castbench._results.publish.board import BoardError, BoardSpec, Entry, use_private_split
from castbench._results.publish.verify import verify_run
from castbench_boards.curve import curve_svg
from castbench_boards.profile import profile_cells
from castbench_boards.render import Board, Excluded, board_csv, board_html, board_json, board_markdown
from castbench_boards.rows import BoardRow, entry_row, rank_rows
from castbench_boards.viewer import PAGE_LIMIT, render_run_files

__all__ = ["build_board", "collect_rows"]


def _verified(path: Path, verify: bool, exported: ExportedRun | None = None) -> ExportedRun:
    """The export at `path` (or `exported`, re-created by this build and written there), verified."""
    exported = exported or read_export(path)
    if verify:
        report = verify_run(exported.run_id, exported.config, exported.trials, exported.config_hash)
        if not report.ok:  # clairvoyance too: a board takes no such run of unprivileged agents
            raise ArchiveError(f"{path}: {report.describe()}")
    return exported


def _declared(
    spec: BoardSpec, root: Path, verify: bool, allow_incomplete: bool, reruns: Mapping[str, ExportedRun]
) -> list[tuple[BoardRow, ExportedRun]]:
    submitted = [entry.name for entry in spec.entries or [] if entry.name not in reruns]
    if spec.require_rerun and submitted:
        raise BoardError(
            f"board {spec.name} requires re-run rows, but this build took {', '.join(submitted)} from "
            f"files (submitted): `castbench leaderboard build {spec.name} --rerun` re-creates entries "
            "that have a recipe (policy = ...); an entry without one cannot be on this board"
        )
    found: list[tuple[BoardRow, ExportedRun]] = []
    for entry in spec.entries or []:
        path = root / entry.run_path(spec.name)
        rerun = reruns.get(entry.name)
        if rerun is None and not path.exists():
            hint = (
                f"`castbench leaderboard build {spec.name} --rerun` re-creates it"
                if entry.policy
                else "export it"
            )
            raise BoardError(f"{entry.name}: run file {path} is missing ({hint})")
        try:
            exported = _verified(path, verify, rerun)
        except ArchiveError as exc:
            raise BoardError(f"{entry.name}: {exc}") from exc
        row = entry_row(spec, entry, exported, allow_incomplete, rerun=rerun is not None)
        profiled = row.model_copy(update={"profile": profile_cells(spec, entry, exported, root)})
        found.append((profiled, exported))
    return found


def _discovered(
    spec: BoardSpec, root: Path, verify: bool, allow_incomplete: bool
) -> tuple[list[tuple[BoardRow, ExportedRun]], list[Excluded]]:
    found: list[tuple[BoardRow, ExportedRun]] = []
    excluded: list[Excluded] = []
    names: set[str] = set()
    for path in sorted((root / "results").rglob(f"*{EXPORT_SUFFIX}")):
        source = path.relative_to(root).as_posix()
        if spec.require_rerun:
            reason = "submitted (taken from a file); the board requires re-run rows"
            excluded.append(Excluded(source=source, reason=reason))
            continue
        try:
            exported = _verified(path, verify)
            config = exported.config
            name = config.policy + ("" if config.critic == "none" else f" + {config.critic}")
            if name in names:
                name = f"{name} ({exported.run_id})"
            row = entry_row(spec, Entry(name=name, run=source), exported, allow_incomplete)
            found.append((row, exported))
            names.add(name)
        except (ArchiveError, BoardError) as exc:
            excluded.append(Excluded(source=source, reason=str(exc)))
    return found, excluded


def collect_rows(
    spec: BoardSpec,
    root: Path,
    *,
    verify: bool = True,
    allow_incomplete: bool = False,
    reruns: Mapping[str, ExportedRun] | None = None,
) -> tuple[list[tuple[BoardRow, ExportedRun]], list[Excluded]]:
    """Rows of the declared entries (any ineligible or unverified one is an error), or of every
    eligible, verified export under `results/` (the others listed as excluded, with the reason).
    `reruns`: entry name -> the run this build re-created from its recipe (`rerun_entries`);
    those rows are `re-run`, every other one `submitted`."""
    use_private_split(spec, root)
    if spec.entries is not None:
        return _declared(spec, root, verify, allow_incomplete, reruns or {}), []
    return _discovered(spec, root, verify, allow_incomplete)


def _incomparable(found: list[tuple[BoardRow, ExportedRun]]) -> list[str]:
    """How the runs differ in what they measured (user simulator, step limit, traits, grading, ...):
    rows of one board must differ only in the agents."""
    (first, reference), *others = found
    return [
        f"{row.name} vs {first.name}: {difference}"
        for row, exported in others
        for difference in setting_differences(reference.config, exported.config)
    ]


def build_board(
    spec: BoardSpec,
    root: Path,
    out_dir: Path,
    *,
    verify: bool = True,
    force: bool = False,
    on_warning: Callable[[str], None] | None = None,
    reruns: Mapping[str, ExportedRun] | None = None,
) -> list[Path]:
    """Build the board into `out_dir`; returns the files written. Incomplete or failed runs, and
    runs that differ in what they measured, are refused unless `force` (then each difference is
    passed to `on_warning`). `reruns`: the runs this build re-created (`rerun_entries`), by entry
    name; only those rows are marked re-run."""
    found, excluded = collect_rows(spec, root, verify=verify, allow_incomplete=force, reruns=reruns)
    if not found:
        reasons = "".join(f"\n  {item.source}: {item.reason}" for item in excluded)
        raise BoardError(f"board {spec.name}: no eligible run{reasons}")
    differences = _incomparable(found)
    if differences and not force:
        raise BoardError(
            f"board {spec.name}: runs not comparable: " + "; ".join(differences) + " (--force to rank anyway)"
        )
    for difference in differences:
        if on_warning is not None:
            on_warning(difference)
    rows = rank_rows(spec, [row for row, _ in found])
    exports = {row.slug: exported for row, exported in found}
    board = Board(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        domains=spec.domains,
        split=spec.split,
        trials=spec.trials,
        metrics=spec.metrics,
        rank_by=spec.ranking_metric,
        allow_privileged=spec.allow_privileged,
        allow_unsandboxed=spec.allow_unsandboxed,
        require_rerun=spec.require_rerun,
        rows=rows,
        excluded=excluded,
    )
    curve = curve_svg(
        f"{spec.title}: pass^k against k",
        [(row.name, row.curve) for row in rows],
        [(row.curve_low, row.curve_high) for row in rows],
    )
    files = {
        "board.json": board_json(board),
        "board.csv": board_csv(board),
        "board.md": board_markdown(board),
        "curve.svg": curve,
        "index.html": board_html(board, curve),
    }
    for row in rows:
        exported = exports[row.slug]
        title = f"{spec.title}: {row.name} (run {row.run_id})"
        pages = render_run_files(exported.run_id, exported.config, exported.trials, row.slug, title=title)
        files.update({f"runs/{path}": text for path, text in pages.items()})
    for relative, text in files.items():
        size = len(text.encode())
        if relative.endswith(".html") and size > PAGE_LIMIT:
            raise BoardError(
                f"board {spec.name}: {relative} would be {size:,} bytes, over the {PAGE_LIMIT:,}-byte "
                "limit of a board page (its task table has a mark per trial: fewer tasks or trials)"
            )
    runs_dir = out_dir / "runs"
    if runs_dir.is_dir():  # pages and chunks of entries no longer on the board, or re-chunked
        for stale in [*runs_dir.glob("*.html"), *runs_dir.glob("*/trials-*.js")]:
            stale.unlink()
        for folder in runs_dir.iterdir():
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    written: list[Path] = []
    for relative, text in files.items():
        path = out_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
