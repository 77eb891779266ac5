"""Issue 56's "done when": a strict board (re-run, sandboxed only, isolated trials only, nothing
privileged or outside castbench) built by castbench's own board code ranks no hostile agent of
`tests/sandbox/hostile.py` above its honest twin, on retail and `tau-retail`: a small version of
`bench/red_team.py` (one task, two trials per pack)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox.probing import kernel_support

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.extra("tau")
@pytest.mark.skipif(not kernel_support().available, reason=f"no sandbox here: {kernel_support().reason}")
def test_a_strict_board_ranks_no_hostile_agent_above_an_honest_one(tmp_path: Path) -> None:
    command = [
        sys.executable,
        str(REPO / "bench" / "red_team.py"),
        "--tasks",
        "1",
        "--trials",
        "2",
        "--one-per-route",
    ]
    done = subprocess.run([*command, "--keep", str(tmp_path)], capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("no hostile row ranks above the honest one") == 2, done.stdout
    for pack in ("retail", "tau-retail"):
        board = tmp_path / "leaderboards" / f"red-team-{pack}" / "board.md"
        assert board.is_file() and "re-run" in board.read_text()
