"""`eval --suite NAME` finds castbench's own boards from any working directory (it looked only
under `./leaderboards/`, so it worked inside the checkout alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import invoke, sqlite_url


def test_suite_works_outside_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    db = sqlite_url(tmp_path / "runs.db")
    argv = ["eval", "--suite", "cast-paper", "--domain", "retail", "--tasks", "retail-test-0001", "--db", db]
    result = invoke(*argv, "--trials", "1")
    assert result.exit_code == 0, result.output
    assert "domains retail (test split)" in result.output
    unknown = invoke("eval", "--suite", "no-such-board", "--db", db)
    assert unknown.exit_code == 2 and "no-such-board.toml" in unknown.output
