"""A run's stored status is always true: `running` only while a live process runs it. A run whose
process was killed (no chance to say so) reads as `interrupted`."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from castbench._records.config import RunConfig
from castbench._records.store import HEARTBEAT_S, ResultsStore
from castbench._records.store.store import _now
from castbench.domain import load_domain

HANGS = "tests.core.hostile_agents:HostilePolicy?mode=hang&on_trial=1"


def _stored(db: Path) -> int:
    try:
        with sqlite3.connect(db) as connection:
            return int(connection.execute("select count(*) from trial").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def _status(db: Path, env: dict[str, str]) -> str:
    castbench = str(Path(sys.executable).parent / "castbench")
    listed = subprocess.run(
        [castbench, "runs", "list", "--db", str(db), "--json"], env=env, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    (run,) = json.loads(listed.stdout)
    return str(run["status"])


def test_running_while_a_process_runs_it_interrupted_once_it_is_killed(
    tmp_path: Path, repo_env: dict[str, str]
) -> None:
    db = tmp_path / "runs.db"
    castbench = str(Path(sys.executable).parent / "castbench")
    task = load_domain("retail").tasks("test")[0].id
    command = [castbench, "eval", "--domain", "retail", "--tasks", task, "--trials", "2", "--policy", HANGS]
    process = subprocess.Popen(
        [*command, "--step-timeout", "0", "--db", str(db)], env=repo_env, stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and _stored(db) == 0:
            time.sleep(0.1)
        assert _status(db, repo_env) == "running"  # trial 1 hangs for good: the process is alive
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    assert _status(db, repo_env) == "interrupted"


def test_a_lease_from_another_host_counts_while_it_is_renewed(tmp_path: Path) -> None:
    store = ResultsStore(str(tmp_path / "runs.db"))
    run_id, _ = store.open_run(RunConfig(domains={"retail": "1-0"}, policy="p"), {})
    store.set_status(run_id, "running")
    assert store.run(run_id).status == "interrupted"  # no process ever claimed it
    for age, status in ((0.0, "running"), (5 * HEARTBEAT_S, "interrupted")):
        store.lease(run_id, "elsewhere", 1, _now() - timedelta(seconds=age))
        assert store.run(run_id).status == status
    store.hold(run_id)
    assert store.run(run_id).status == "running"  # this process, alive
    store.release(run_id)
    assert store.run(run_id).status == "interrupted"
