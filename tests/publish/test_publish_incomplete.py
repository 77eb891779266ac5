"""A leaderboard never ranks part of an agent's work: an export missing planned trials is refused
(exit 2, naming the tasks) unless `--force`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.store.export import read_export, write_export
from castbench._results.publish.board import BoardError, load_board
from castbench_boards.build import build_board
from tests.publish.exports import Exports

DROPPED = "retail-test-0002"
BOARD = (
    'title = "Board"\ndomains = { retail = 3 }\ntrials = 2\nmetrics = ["pass^1"]\nallow_privileged = true\n'
    'entries = [{ name = "noisy", run = "results/noisy.castbench.json.gz" }]\n'
)


def test_leaderboards_refuse_an_incomplete_run_unless_forced(exports: Exports, tmp_path: Path) -> None:
    exported = read_export(exports.noisy)
    trimmed = exported.model_copy(update={"trials": [t for t in exported.trials if t.task_id != DROPPED]})
    write_export(trimmed, tmp_path / "results" / "noisy.castbench.json.gz")
    assert trimmed.status == "complete"  # the stored status says complete: the planned tasks tell
    board = tmp_path / "leaderboards" / "board.toml"
    board.parent.mkdir(parents=True)
    board.write_text(BOARD)
    with pytest.raises(BoardError, match=f"incomplete.*{DROPPED}"):
        build_board(load_board(board), tmp_path, tmp_path / "out")
    cli = CliRunner()
    refused = cli.invoke(app, ["leaderboard", "build", str(board), "--root", str(tmp_path)])
    assert refused.exit_code == 2 and DROPPED in " ".join(refused.output.split())
    forced = cli.invoke(app, ["leaderboard", "build", str(board), "--root", str(tmp_path), "--force"])
    assert forced.exit_code == 0, forced.output
