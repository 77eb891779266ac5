"""The shared store on a real Postgres server (started by the test: `tests/postgres.py`): 64-bit
seeds, an old schema migrated in place, and several `castbench eval` processes splitting one run
through claims with leases — a killed worker's trials run by another, none run twice or lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._records.store.leases import workers
from castbench._records.trial import TrialRecord
from castbench._run.api import build_config
from castbench._run.engine import run_eval
from tests.postgres import new_database

TASKS = ["retail-test-0001", "retail-test-0002", "retail-test-0003"]


@pytest.fixture
def pg_url(postgres: str) -> str:
    return new_database(postgres)


def _outcomes(records: list[TrialRecord]) -> list[tuple[object, ...]]:
    """What a trial did and scored, without its timings."""
    return [
        (r.domain, r.task_id, r.trial_index, r.seed, r.status, r.reward, r.end_reason, len(r.steps))
        for r in records
    ]


def test_a_run_in_postgres_keeps_64_bit_seeds_and_equals_sqlite(pg_url: str, tmp_path: Path) -> None:
    config, agents = build_config(domains="retail", policy="scripted:noisy", trials=3, tasks=TASKS, seed=5)
    shared = ResultsStore(pg_url)
    local = ResultsStore(f"sqlite:///{tmp_path / 'r.db'}")
    in_postgres = run_eval(config, agents, shared, concurrency=4)
    in_sqlite = run_eval(config, agents, local)
    stored = shared.trials(in_postgres.run_id)
    assert len(stored) == 9 and any(record.seed >= 2**31 for record in stored)
    assert _outcomes(stored) == _outcomes(local.trials(in_sqlite.run_id))
    assert run_eval(config, agents, shared).ran == 0  # resumes: nothing left to run


def test_an_old_schema_is_migrated_in_place(pg_url: str) -> None:
    store = ResultsStore(pg_url)
    store.db.execute("ALTER TABLE trial ALTER COLUMN seed TYPE INTEGER")  # before seeds were 64-bit
    config, agents = build_config(domains="retail", policy="oracle", trials=1, tasks=TASKS[:1])
    reopened = ResultsStore(pg_url)
    kind = reopened.db.one(
        "SELECT data_type FROM information_schema.columns WHERE table_name = 'trial' AND column_name = 'seed'"
    )
    assert kind == ("bigint",)
    outcome = run_eval(config, agents, reopened)
    assert outcome.ran == 1 and reopened.trials(outcome.run_id)[0].seed >= 0


def _rows(store: ResultsStore) -> int:
    (count,) = store.db.one("SELECT count(*) FROM trial") or (0,)
    return int(count)


def _wait_for(condition, what: str, timeout: float = 180.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_workers_split_a_run_and_a_killed_workers_trials_are_rerun(
    pg_url: str, tmp_path: Path, repo_env: dict[str, str]
) -> None:
    """Worker A starts; B joins; A is killed mid-run (SIGKILL, no clean-up). B takes A's trials
    over once their leases run out and finishes the run: every trial stored exactly once, and the
    same outcomes as one process on SQLite."""
    policy = "tests.core.fixtures_agents:SlowNoisyPolicy?delay=2.0&p=0.4"
    argv = ["eval", "--domain", "retail", "--tasks", ",".join(TASKS), "--trials", "8", "--seed", "9"]
    argv += ["--policy", policy, "--concurrency", "2", "--lease", "2"]
    store = ResultsStore(pg_url)

    def worker() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(Path(sys.executable).parent / "castbench"), *argv, "--db", pg_url],
            env=repo_env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    first = worker()
    _wait_for(lambda: _rows(store) >= 2, "worker A's first trials")
    second = worker()
    _wait_for(lambda: len(workers(store.db, store.run("latest").id)) == 2, "worker B to join")
    _wait_for(lambda: _rows(store) >= 4, "more trials")
    os.kill(first.pid, signal.SIGKILL)
    first.wait(30)
    orphaned = store.db.execute(
        "SELECT task_id, trial_index FROM claim WHERE state = 'running' AND worker_id LIKE :a",
        {"a": f"%:{first.pid}:%"},
    ).fetchall()
    assert orphaned  # A died holding claims
    output, _ = second.communicate(timeout=300)
    assert second.returncode == 0, output

    run_id = store.run("latest").id
    stored = store.trials(run_id)
    assert len(stored) == 24 == len({(r.task_id, r.trial_index) for r in stored})  # none lost, none twice
    assert {tuple(row) for row in orphaned} <= {(r.task_id, r.trial_index) for r in stored}
    config, agents = build_config(domains="retail", policy=policy, trials=8, tasks=TASKS, seed=9)
    local = ResultsStore(f"sqlite:///{tmp_path / 'one.db'}")
    alone = run_eval(config, agents, local, concurrency=8)
    assert _outcomes(stored) == _outcomes(local.trials(alone.run_id))  # the same trials, seeds and outcomes

    states = {status.pid: status for status in workers(store.db, run_id)}
    assert states[first.pid].state == "silent" and states[second.pid].state == "finished"
    assert states[second.pid].trials_done > 0 and states[first.pid].trials_done >= 0
    shown = CliRunner().invoke(app, ["runs", "show", run_id, "--db", pg_url])
    assert shown.exit_code == 0, shown.output
    assert "workers of" in shown.output and "silent" in shown.output and "finished" in shown.output
