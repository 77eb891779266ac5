"""A board of several domains gives each its own column (the ranking metric on that domain's
tasks alone) beside the pooled figures, and its page wraps long agent strings instead of
scrolling sideways."""

from __future__ import annotations

import json
from pathlib import Path

from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run, write_export
from castbench._results.publish.board import load_board
from castbench._run.api import evaluate
from castbench_boards.build import build_board
from tests.support import sqlite_url


def test_a_board_of_two_domains_has_a_column_for_each(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    result = evaluate(db=db, domains="retail,airline", trials=2, policy="scripted:noisy?p=0.5")
    write_export(
        export_run(ResultsStore(db), result.outcome.run_id), tmp_path / "results" / "noisy.castbench.json.gz"
    )
    board_file = tmp_path / "leaderboards" / "two.toml"
    board_file.parent.mkdir(parents=True)
    board_file.write_text(
        'title = "Two domains"\ndomains = { retail = 3, airline = 3 }\ntrials = 2\n'
        'metrics = ["pass^1", "pass^2"]\nallow_privileged = true\n'
    )
    out = tmp_path / "site"
    build_board(load_board(board_file), tmp_path, out)
    (row,) = json.loads((out / "board.json").read_text())["rows"]
    assert set(row["domains"]) == {"retail", "airline"}
    summary = result.summary
    for domain, cell in row["domains"].items():
        assert abs(cell["value"] - summary.domains[domain].pass_hat[2]) < 1e-4  # ranked by pass^2
    page = (out / "index.html").read_text()
    assert (
        'class="domain" title="pass^2 on retail' in page and 'class="domain" title="pass^2 on airline' in page
    )
    # ids wrap only between their pieces (never `overflow-wrap: anywhere`), by-domain figures below
    assert "overflow-wrap: anywhere" not in page and '<table class="domains cards">' in page
    markdown = (out / "board.md").read_text()
    assert "pass^2 airline" in markdown and "pass^2 retail" in markdown
