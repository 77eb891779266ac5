"""Ctrl-C on a real `castbench eval` process: no new trial starts, trials in flight (here agents
hung for good) are dropped rather than stored half-done, the run is marked `interrupted`, the
command says how to resume and exits 130; resuming stores each trial exactly once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from castbench.domain import load_domain
from tests.support import sqlite_url

TASKS, TRIALS = 4, 4
HANGS_ON_LAST_TRIAL = f"tests.core.hostile_agents:HostilePolicy?mode=hang&on_trial={TRIALS - 1}"


def _count(db: Path, query: str) -> int:
    try:
        with sqlite3.connect(db) as connection:
            return int(connection.execute(query).fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def _command(db: Path, *extra: str) -> list[str]:
    tasks = ",".join(task.id for task in load_domain("retail").tasks("test")[:TASKS])
    castbench = str(Path(sys.executable).parent / "castbench")
    return [
        *[castbench, "eval", "--domain", "retail", "--tasks", tasks, "--trials", str(TRIALS)],
        *["--policy", HANGS_ON_LAST_TRIAL, "--concurrency", "2", "--db", sqlite_url(db), *extra],
    ]


def _ctrl_c_delivered() -> None:
    """In the child before it starts: Ctrl-C as a terminal delivers it. A test run started in the
    background by a non-interactive shell (`... &`, as a CI script may be) has SIGINT ignored,
    every child inherits that, and Python then leaves it ignored: the signal would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stalled(db: Path, process: subprocess.Popen[str], timeout: float = 90) -> int:
    """Wait until both workers hang (the stored count stops growing), return that count."""
    deadline, last, since = time.monotonic() + timeout, -1, time.monotonic()
    while time.monotonic() < deadline and process.poll() is None:
        stored = _count(db, "select count(*) from trial")
        if stored != last:
            last, since = stored, time.monotonic()
        elif stored > 0 and time.monotonic() - since > 2:
            return stored
        time.sleep(0.1)
    raise AssertionError(f"the run never stalled: {last} stored, exit {process.poll()}")


def test_ctrl_c_interrupts_a_run_with_hung_agents_and_the_run_resumes(
    tmp_path: Path, repo_env: dict[str, str]
) -> None:
    db = tmp_path / "runs.db"
    command = _command(db, "--step-timeout", "0", "--trial-timeout", "0")  # nothing would end them
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=repo_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_ctrl_c_delivered,
    )
    stored = _stalled(db, process)
    os.kill(process.pid, signal.SIGINT)
    started = time.monotonic()
    output, _ = process.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert process.returncode == 130, output
    text = " ".join(output.split())
    assert (
        f"{stored} of {TASKS * TRIALS} trials stored" in text and "re-run the same command to resume" in text
    )
    assert _count(db, "select count(*) from trial") == stored  # nothing half-done was added
    assert _count(db, "select count(*) from trial where end_reason = 'timeout'") == 0
    status = subprocess.run(
        [command[0], "runs", "list", "--db", sqlite_url(db), "--json"],
        env=repo_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert '"status": "interrupted"' in status.stdout, status.stdout + status.stderr

    resumed = subprocess.run(  # the same run: time limits are not part of its identity
        _command(db, "--step-timeout", "0.5"), cwd=tmp_path, env=repo_env, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resuming: {stored} of {TASKS * TRIALS} trials already stored" in " ".join(resumed.stdout.split())
    assert _count(db, "select count(*) from trial") == TASKS * TRIALS
    distinct = "select count(*) from (select distinct run_id, task_id, trial_index from trial)"
    assert _count(db, distinct) == TASKS * TRIALS and _count(db, "select count(*) from run") == 1
    assert _count(db, "select count(*) from trial where end_reason = 'timeout'") == TASKS


@pytest.mark.parametrize("second", [True, False])
def test_a_second_ctrl_c_while_winding_down_exits_at_once(
    tmp_path: Path, repo_env: dict[str, str], second: bool
) -> None:
    """The wind-down (here made to block) gives way to a second Ctrl-C; without one it runs on."""
    script = tmp_path / "wind_down.py"
    script.write_text(
        textwrap.dedent(
            """
            import time
            from castbench._run.executors.local import second_interrupt_exits
            with second_interrupt_exits():
                print("winding down", flush=True)
                time.sleep(5)
            print("wound down", flush=True)
            """
        )
    )
    process = subprocess.Popen([sys.executable, str(script)], env=repo_env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "winding down"
    started = time.monotonic()
    if second:
        os.kill(process.pid, signal.SIGINT)
    output, _ = process.communicate(timeout=30)
    if second:
        assert process.returncode == 130 and time.monotonic() - started < 3 and "wound down" not in output
    else:
        assert process.returncode == 0 and "wound down" in output
