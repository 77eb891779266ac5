"""The installed `castbench` console script, run as a user runs it (a real subprocess)."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.support import sqlite_url

CASTBENCH = shutil.which("castbench") or str(
    Path(__file__).resolve().parents[2] / ".." / "venv" / "bin" / "castbench"
)


def _castbench() -> str:
    import sys

    candidate = Path(sys.executable).parent / "castbench"
    return str(candidate) if candidate.exists() else CASTBENCH


def _trials(path: Path) -> int:
    try:
        with sqlite3.connect(path) as connection:
            return int(connection.execute("select count(*) from trial").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_help_lists_the_commands(repo_env: dict[str, str]) -> None:
    result = subprocess.run(
        [_castbench(), "--help"], capture_output=True, text=True, env=repo_env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    for command in ("eval", "runs", "domains", "tasks"):
        assert command in result.stdout


def test_eval_without_flags_runs_the_offline_defaults(tmp_path: Path, repo_env: dict[str, str]) -> None:
    """No flags at all; the results go where CASTBENCH_DB says, nothing lands in the working directory.
    The full default run takes a while, so the test stops it once trials are being stored."""
    db = tmp_path / "env.db"
    env = {**repo_env, "CASTBENCH_DB": sqlite_url(db), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [_castbench(), "eval"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        first_line = process.stdout.readline().rstrip()
        deadline = time.monotonic() + 60
        while _trials(db) < 5 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        stored = _trials(db)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert first_line.startswith(("castbench eval on the offline defaults: ", "castbench eval: ")), first_line
    assert (
        "domains all (test split), policy scripted:noisy, critic none, user scripted, 8 trials, seed 0"
        in first_line
    )
    assert stored >= 5
    assert not (tmp_path / "results").exists()
