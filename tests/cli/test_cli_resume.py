"""A run killed with SIGKILL half-way resumes when the same command is run again: it reuses what
was stored, runs only the rest, stores no trial twice, and ends with exactly the trials of an
uninterrupted run and the figures the tests' own code recomputes from them."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._results.report.summary import RunSummary
from castbench.domain import load_domain
from tests.metrics.reference import recompute
from tests.support import invoke, sqlite_url

pytestmark = pytest.mark.slow  # a subprocess run killed half-way, then resumed

N_TASKS, N_TRIALS = 30, 8
SLOW = "tests.core.fixtures_agents:SlowNoisyPolicy?delay=0.005&p=0.4"
FAST = "tests.core.fixtures_agents:SlowNoisyPolicy?delay=0&p=0.4"


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
        sqlite_url(db),
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
    if process.poll() is not None:  # it ended on its own: that is the failure, and its reason is on stderr
        pytest.fail(f"eval ended (exit {process.returncode}) before it was killed: {process.stderr.read()!r}")  # type: ignore[union-attr]
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

    # the reference: an uninterrupted run's stored rewards, with figures recomputed by the tests' own code
    reference_db = tmp_path / "reference.db"
    result = invoke(*_arguments(FAST, reference_db, tmp_path / "uninterrupted.json", tasks))
    assert result.exit_code == 0, result.output
    uninterrupted = _records(reference_db)
    resumed_records = _records(db)
    assert [_outcome(r) for r in resumed_records] == [_outcome(r) for r in uninterrupted]
    want = recompute(uninterrupted, N_TRIALS)
    got = RunSummary.model_validate_json(output.read_text())
    for scope, report in (("overall", got.overall), ("retail", got.domains["retail"])):
        assert {task.split("/")[-1]: (o.n, o.successes) for task, o in report.per_task.items()} == want.counts
        assert report.pass_hat == pytest.approx(want.pass_hat, abs=1e-12), scope
        assert report.pass_at == pytest.approx(want.pass_at, abs=1e-12), scope
        assert report.n_trials == total
    assert 0 < want.pass_hat[8] < want.pass_hat[1] < 1  # mistakes were made


def _records(db: Path) -> list[TrialRecord]:
    store = ResultsStore(sqlite_url(db))
    return store.trials(store.run("latest").id)


def _outcome(record: TrialRecord) -> tuple[str, int, int, str, float | None]:
    return (record.task_id, record.trial_index, record.seed, record.status, record.reward)
