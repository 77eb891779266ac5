"""Rows of one board differ only in their agents: runs measured with another user profile (or step
limit, grading mode, ...) are refused unless `--force`, which warns."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run, write_export
from castbench._results.publish.board import BoardError, load_board
from castbench._run.api import evaluate
from castbench_boards.build import build_board
from tests.publish.exports import Exports

BOARD = (
    'title = "Board"\ndomains = { retail = 3 }\ntrials = 2\nmetrics = ["pass^1"]\nallow_privileged = true\n'
    'entries = [{ name = "noisy", run = "results/noisy.castbench.json.gz" }, '
    '{ name = "impatient", run = "results/impatient.castbench.json.gz" }]\n'
)


def test_a_board_refuses_runs_measured_differently(exports: Exports, tmp_path: Path) -> None:
    impatient = evaluate(
        db=exports.db, domains="retail", policy="scripted:noisy", trials=2, traits="impatience=high"
    )
    write_export(
        export_run(ResultsStore(exports.db), impatient.outcome.run_id),
        tmp_path / "results" / "impatient.castbench.json.gz",
    )
    (tmp_path / "results" / "noisy.castbench.json.gz").write_bytes(exports.noisy.read_bytes())
    board = tmp_path / "leaderboards" / "board.toml"
    board.parent.mkdir(parents=True)
    board.write_text(BOARD)
    with pytest.raises(BoardError, match=r"impatient vs noisy: user traits \(--traits\) differs"):
        build_board(load_board(board), tmp_path, tmp_path / "out")
    forced = CliRunner().invoke(app, ["leaderboard", "build", str(board), "--root", str(tmp_path), "--force"])
    assert forced.exit_code == 0, forced.output
    assert "warning (forced): impatient vs noisy: user traits" in " ".join(forced.output.split())
