"""Leaderboards: definitions, eligibility, ranking, deterministic output, and the committed board."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.store.export import read_export
from castbench._results.publish.board import BoardError, BoardMetric, BoardSpec, Entry, load_board
from castbench_boards import build
from castbench_boards.build import build_board
from castbench_boards.curve import curve_svg
from castbench_boards.render import Board, board_markdown
from castbench_boards.rows import BoardRow, Cell, rank_rows
from castbench_boards.viewer import PAGE_LIMIT
from tests.publish.exports import Exports

REPO = Path(__file__).resolve().parents[2]
cli = CliRunner()


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


BOARDS = [
    "scripted-baselines",
    pytest.param(
        "cast-paper",
        marks=[
            pytest.mark.slow,
            pytest.mark.extra("tau"),
        ],
    ),
    pytest.param(
        "tau2",
        marks=[
            pytest.mark.slow,
            pytest.mark.extra("tau2"),
        ],
    ),
]


@pytest.mark.parametrize("board", BOARDS)
def test_committed_board_is_up_to_date_with_its_committed_runs(board: str, tmp_path: Path) -> None:
    """If this fails: `castbench leaderboard build BOARD --rerun` and commit the result (that build
    re-created the entries with a recipe, so their rows are marked re-run: so here). Each committed
    run is re-executed and re-graded by `test_verify.py::test_the_committed_results_verify`, exactly
    as a build verifies it; here the build checks the files it writes, not the runs again."""
    spec = load_board(REPO / "leaderboards" / f"{board}.toml")
    recipes = [entry for entry in spec.entries or [] if entry.policy]
    reruns = {entry.name: read_export(REPO / entry.run_path(spec.name)) for entry in recipes}
    build_board(spec, REPO, tmp_path, reruns=reruns, verify=False)
    committed = _files(REPO / "leaderboards" / board)
    rebuilt = _files(tmp_path)
    assert sorted(committed) == sorted(rebuilt)
    stale = [name for name in rebuilt if rebuilt[name] != committed[name]]
    assert not stale, f"out of date: {stale}"


def test_committed_results_stay_small() -> None:
    """Each board's committed runs stay under 6 MiB (a clone stays quick as boards are added).
    The reference floors look up every record they can reach and say every value, 8 identical
    trials a task, far beyond gzip's 32 KiB window: the export stores each such trial once."""
    boards = [folder for folder in (REPO / "results").iterdir() if folder.is_dir()]
    assert boards
    for folder in boards:
        sizes = [p.stat().st_size for p in folder.rglob("*.castbench.json.gz")]
        assert sizes and sum(sizes) < 6 * 1024 * 1024, folder.name
        for path in folder.rglob("*.castbench.json.gz"):
            assert json.loads(gzip.decompress(path.read_bytes()))["format_version"] == 2, path


def test_committed_board_pages_stay_under_the_page_limit() -> None:
    """No committed page is over 1 MB: a run page holds its task table, its trajectories are in
    chunk files beside it (at most ~0.7 MB each), loaded when a trial is opened."""
    pages = list((REPO / "leaderboards").rglob("*.html"))
    assert pages
    for path in pages:
        assert path.stat().st_size <= PAGE_LIMIT, path
    for path in (REPO / "leaderboards").rglob("trials-*.js"):
        assert path.stat().st_size <= PAGE_LIMIT, path


def test_a_board_page_over_the_limit_is_refused_naming_it(
    exports: Exports, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _board(exports.root, HEADER + "allow_privileged = true\n")
    monkeypatch.setattr(build, "PAGE_LIMIT", 20_000)  # the retail split's 2 x 120 marks are more
    with pytest.raises(
        BoardError, match=r"^board test-board: runs/\S+\.html would be [\d,]+ bytes, over the 20,000"
    ):
        build_board(spec, exports.root, tmp_path / "out", verify=False)
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_scripted_board_says_what_its_rows_are() -> None:
    markdown = (REPO / "leaderboards" / "scripted-baselines" / "board.md").read_text()
    spec = load_board(REPO / "leaderboards" / "scripted-baselines.toml")
    assert spec.entries and all(entry.note.startswith("scripted baseline") for entry in spec.entries)
    assert markdown.count("scripted baseline") >= len(spec.entries)
    assert "† privileged" in markdown


def _board(root: Path, text: str) -> BoardSpec:
    path = root / "leaderboards" / "test-board.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return load_board(path)


HEADER = (
    'title = "Test board"\ndomains = { retail = 3 }\ntrials = 2\n'
    'metrics = ["pass^1", { metric = "pass^2", name = "pass^2 (both)" }]\n'
)


def test_discovered_runs_exclude_the_ineligible(exports: Exports, tmp_path: Path) -> None:
    spec = _board(exports.root, HEADER + "allow_privileged = true\n")
    written = build_board(spec, exports.root, tmp_path)
    board_md = (tmp_path / "board.md").read_text()
    assert {p.name for p in written} >= {"board.md", "board.csv", "board.json", "index.html", "curve.svg"}
    assert "| 1 | oracle † |" in board_md and "| 2 | scripted:noisy † |" in board_md
    assert "pass^2 (both)" in board_md
    assert "`results/subset.castbench.json.gz`: " in board_md and "ran a subset of 3 task(s)" in board_md
    assert (tmp_path / "runs" / "oracle.html").exists()
    assert (tmp_path / "runs" / "oracle" / "trials-001.js").exists()  # its trajectories, beside it


def test_privileged_runs_need_permission(exports: Exports, tmp_path: Path) -> None:
    spec = _board(exports.root, HEADER)
    with pytest.raises(BoardError, match="no eligible run") as error:
        build_board(spec, exports.root, tmp_path)
    assert "privileged policy (read the ground truth); the board allows none" in str(error.value)


def test_declared_entries_must_be_eligible_and_match_their_recipe(exports: Exports, tmp_path: Path) -> None:
    entries = (
        'entries = [{ name = "noisy", run = "results/noisy.castbench.json.gz", '
        'policy = "scripted:noisy?p=0.1" }]\n'
    )
    spec = _board(exports.root, HEADER + "allow_privileged = true\n" + entries)
    with pytest.raises(
        BoardError, match=r"policy is 'scripted:noisy', the entry says 'scripted:noisy\?p=0.1'"
    ):
        build_board(spec, exports.root, tmp_path)
    newer = _board(exports.root, HEADER.replace("retail = 3", "retail = 4") + "allow_privileged = true\n")
    with pytest.raises(BoardError, match="version 3-0 is not comparable with the board's 4-x"):
        build_board(newer, exports.root, tmp_path)
    missing = _board(exports.root, HEADER + 'entries = [{ name = "ghost", policy = "oracle" }]\n')
    with pytest.raises(BoardError, match=r"ghost.castbench.json.gz is missing .*--rerun"):
        build_board(missing, exports.root, tmp_path)


def test_board_files_are_validated(tmp_path: Path) -> None:
    with pytest.raises(BoardError, match="needs more than the board's 2 trials"):
        _board(tmp_path, 'title = "x"\ndomains = { retail = 1 }\ntrials = 2\nmetrics = ["pass^4"]\n')
    with pytest.raises(BoardError, match="rank_by pass\\^2 is not one of the board's metrics"):
        _board(tmp_path, 'title = "x"\ndomains = { retail = 1 }\nmetrics = ["pass^1"]\nrank_by = "pass^2"\n')
    with pytest.raises(BoardError, match="unknown metric"):
        _board(tmp_path, 'title = "x"\ndomains = { retail = 1 }\nmetrics = ["accuracy"]\n')
    with pytest.raises(BoardError, match="not valid TOML"):
        _board(tmp_path, "title = \n")


def _row(name: str, value: float, **extra: object) -> BoardRow:
    cell = Cell(value=value, low=value - 0.1, high=value + 0.1)
    fields: dict[str, object] = {
        "name": name, "slug": name.lower(), "note": "", "run_id": "r-1", "policy": "p", "critic": "none",
        "user": "scripted", "traits": None, "privileged": [], "tasks": 10, "trials": 2,
        "metrics": {"pass^1": cell},
        "curve": [value, value / 2], "false_flag_rate": None, "detection_rate": None, "cost_per_trial": None,
    }  # fmt: skip
    return BoardRow(**{**fields, **extra})  # type: ignore[arg-type]


def test_ranking_shares_ranks_on_ties() -> None:
    spec = BoardSpec(name="b", title="b", domains={"retail": 1}, trials=2, metrics=["pass^1"])  # type: ignore[list-item]
    ranked = rank_rows(spec, [_row("c", 0.5), _row("a", 0.9), _row("b", 0.5)])
    assert [(row.rank, row.name) for row in ranked] == [(1, "a"), (2, "b"), (2, "c")]


def test_text_from_runs_is_escaped_in_markdown_and_svg() -> None:
    row = _row("x", 0.5, rank=1, policy="evil|<script>alert(1)</script>", traits="a|<b>")
    board = Board(
        name="b", title="b", description="", domains={"retail": 1}, split="test", trials=2,
        metrics=[BoardMetric(metric="pass^1")], rank_by="pass^1", allow_privileged=False, rows=[row],
    )  # fmt: skip
    lines = board_markdown(board).splitlines()
    header = next(line for line in lines if line.startswith("| # |"))
    table_row = next(line for line in lines if line.startswith("| 1 |"))
    assert len(re.split(r"(?<!\\)\|", table_row)) == len(re.split(r"(?<!\\)\|", header))
    assert "`evil\\|<script>alert(1)</script>`" in table_row  # literal inside a code span
    assert "a\\|&lt;b&gt;" in table_row
    svg = curve_svg("t", [("<script>alert(1)</script>", [1.0, 0.5])])
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_rerun_recreates_entries_and_builds(tmp_path: Path) -> None:
    board = tmp_path / "leaderboards" / "tiny.toml"
    board.parent.mkdir(parents=True)
    board.write_text(
        'title = "Tiny"\ndomains = { retail = 3 }\ntrials = 1\nmetrics = ["pass^1"]\n'
        "allow_privileged = true\n"
        'entries = [{ name = "oracle", policy = "oracle", note = "scripted baseline" }]\n'
    )
    args = ["leaderboard", "build", "tiny", "--root", str(tmp_path)]
    result = cli.invoke(app, [*args, "--rerun"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    export = tmp_path / "results" / "tiny" / "oracle.castbench.json.gz"
    assert export.exists() and "re-ran oracle" in result.output
    first = _files(tmp_path / "leaderboards" / "tiny")
    assert "| 1 | oracle † | scripted baseline |" in first["board.md"].decode()
    own = "trials: castbench's own agents"
    assert f"| re-run; policy built-in †; user built-in; {own} |" in first["board.md"].decode()
    again = cli.invoke(app, args, env={"COLUMNS": "200"})
    assert again.exit_code == 0
    rebuilt = _files(tmp_path / "leaderboards" / "tiny")  # from the file alone: same figures, submitted
    assert rebuilt["board.md"].decode() == first["board.md"].decode().replace("| re-run;", "| submitted;")
    assert rebuilt["runs/oracle.html"] == first["runs/oracle.html"]
    Entry(name="x")  # an entry without a recipe is allowed (a submitted run)
