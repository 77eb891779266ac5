"""What a CI log shows: `castbench` with its output piped (no terminal, no COLUMNS set) prints
every figure whole, and the help names the extras to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import sqlite_url


def _piped(args: list[str], repo_env: dict[str, str], cwd: Path) -> str:
    env = {key: value for key, value in repo_env.items() if key != "COLUMNS"}
    result = subprocess.run(
        [str(Path(sys.executable).parent / "castbench"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_piped_eval_prints_intervals_and_domains_whole(tmp_path: Path, repo_env: dict[str, str]) -> None:
    out = _piped(
        [
            "eval",
            "--domain",
            "all",
            "--tasks",
            "retail-test-0001,telehealth-test-0001,airline-test-0001,telecom-test-0001",
            "--policy",
            "scripted:noisy",
            "--trials",
            "2",
            "--db",
            sqlite_url(tmp_path / "r.db"),
        ],
        repo_env,
        tmp_path,
    )
    assert "…" not in out, out  # at 80 columns: `0.00–1.…`, `telehea…`
    assert " telehealth " in out and "strict: 0 if an action broke the policy" in out, out


def test_help_names_the_extras(tmp_path: Path, repo_env: dict[str, str]) -> None:
    out = _piped(["eval", "--help"], repo_env, tmp_path)
    assert "castbench[postgres]" in out, out
