"""A run killed with SIGKILL half-way resumes when the same command is run again: it reuses what
was stored, runs only the rest, stores no trial twice, and ends with exactly the summary of an
uninterrupted run."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from castbench.cli.app import app
from castbench.domain import load_domain

N_TASKS, N_TRIALS = 30, 8
SLOW = "tests.core.fixtures_agents:SlowNoisyPolicy?delay=0.005&p=0.4"
FAST = "tests.core.fixtures_agents:SlowNoisyPolicy?delay=0&p=0.4"
FIGURES = ("n_tasks", "n_trials", "pass_hat", "pass_at", "ci95", "per_task")


def _castbench() -> str:
    return str(Path(sys.executable).parent / "castbench")


def _arguments(policy: str, db: Path, output: Path, tasks: list[str]) -> list[str]:
    return [
        "eval",
        "--domain",
        "retail",
        "--policy",
        policy,
        "--trials",
        str(N_TRIALS),
        "--seed",
        "5",
        "--tasks",
        ",".join(tasks),
        "--db",
        f"sqlite:///{db}",
        "--output",
        str(output),
    ]


def _count(db: Path, query: str = "select count(*) from trial") -> int:
    try:
        with sqlite3.connect(db) as connection:
            return int(connection.execute(query).fetchone()[0])
    except sqlite3.OperationalError:  # the tables do not exist yet
        return 0


def test_a_killed_run_resumes_to_the_uninterrupted_summary(tmp_path: Path, repo_env: dict[str, str]) -> None:
    tasks = [task.id for task in load_domain("retail").tasks("test")[:N_TASKS]]
    total = N_TASKS * N_TRIALS
    db, output = tmp_path / "killed.db", tmp_path / "resumed.json"
    command = [_castbench(), *_arguments(SLOW, db, output, tasks)]

    process = subprocess.Popen(
        command, cwd=tmp_path, env=repo_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 90
    while _count(db) < 40 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    stored = _count(db)
    assert process.returncode == -signal.SIGKILL, process.stderr.read() if process.stderr else ""
    assert 40 <= stored < total, f"{stored} trials stored when killed"
    assert not output.exists()

    resumed = subprocess.run(command, cwd=tmp_path, env=repo_env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    text = " ".join(resumed.stdout.split())
    already = int(re.search(r"resuming: (\d+) of (\d+) trials already stored", text).group(1))  # type: ignore[union-attr]
    assert already >= stored and f"of {total} trials" in text
    assert re.search(rf"resumed in \S+ \({total - already} trials run, {already} reused\)", text), text

    assert _count(db) == total
    assert (
        _count(db, "select count(*) from (select distinct run_id, task_id, trial_index from trial)") == total
    )
    assert _count(db, "select count(*) from run") == 1

    reference = tmp_path / "uninterrupted.json"
    result = CliRunner().invoke(app, _arguments(FAST, tmp_path / "reference.db", reference, tasks))
    assert result.exit_code == 0, result.output
    got, want = json.loads(output.read_text()), json.loads(reference.read_text())
    for scope in ("overall", "retail"):
        mine = got["overall"] if scope == "overall" else got["domains"]["retail"]
        theirs = want["overall"] if scope == "overall" else want["domains"]["retail"]
        for field in FIGURES:
            assert mine[field] == theirs[field], f"{scope}.{field}"
    assert got["domains"]["retail"]["n_trials"] == total
    assert 0 < got["overall"]["pass_hat"]["8"] < got["overall"]["pass_hat"]["1"] < 1  # mistakes were made
