"""Group commit (`castbench._run.commits`): a process killed outright loses only the finished
trials of the batch not yet committed; re-running the command redoes exactly those, under the
same run id, with no trial lost or stored twice, and the figures of a run never killed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._run import commits
from castbench._run.api import evaluate

OPTIONS: dict[str, Any] = {
    "domains": "retail",
    "trials": 2,
    "tasks": [f"retail-test-{index:04d}" for index in range(1, 6)],
    "policy": "scripted:noisy",
}
BATCH = 4
KILLED_AT = 7
"""The process dies as its 7th trial ends: trials 1-4 are one committed batch, 5-7 wait for the
batch still gathering (its window made long here), so those three are lost."""

_KILLED = """
import json, os, sys, time
from castbench._run.api import evaluate
from castbench._run import commits
from castbench._records.store import ResultsStore

commits.COMMIT_MOST, commits.GATHER_S = {batch}, 60.0
db, options, killed_at = sys.argv[1], json.loads(sys.argv[2]), {killed_at}
seen = []

def on_trial(record):
    seen.append(record)
    if len(seen) == killed_at:
        store = ResultsStore(db)
        run_id = store.runs()[-1].id
        deadline = time.monotonic() + 30
        while store.count_trials(run_id) < {batch} and time.monotonic() < deadline:
            time.sleep(0.01)  # the first batch is committed; the next one is still gathering
        os._exit(9)  # as SIGKILL would: no handler, no flush

evaluate(db=db, on_trial=on_trial, **options)
"""


def _keys(db: str, run_id: str) -> list[tuple[str, str, int]]:
    rows = (
        ResultsStore(db)
        .db.execute("SELECT domain, task_id, trial_index FROM trial WHERE run_id = :run", {"run": run_id})
        .fetchall()
    )
    return [(domain, task, int(index)) for domain, task, index in rows]


def test_a_kill_within_a_batch_loses_only_that_batch_and_the_resume_redoes_exactly_it(
    tmp_path: Path, repo_env: dict[str, str]
) -> None:
    db = f"sqlite:///{tmp_path}/runs.db"
    script = textwrap.dedent(_KILLED.format(batch=BATCH, killed_at=KILLED_AT))
    done = subprocess.run(
        [sys.executable, "-c", script, db, json.dumps(OPTIONS)],
        env=repo_env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 9, done.stderr.decode()[-2000:]
    store = ResultsStore(db)
    (run,) = store.runs()
    before = _keys(db, run.id)
    assert len(before) == BATCH  # the three trials of the open batch were lost, nothing else
    assert run.status == "interrupted"  # running, held by no live process

    resumed: list[TrialRecord] = []
    again = evaluate(db=db, on_trial=resumed.append, **OPTIONS)
    total = len(OPTIONS["tasks"]) * OPTIONS["trials"]
    assert (again.outcome.run_id, again.outcome.resumed) == (run.id, True)
    assert (again.outcome.already_done, again.outcome.ran) == (BATCH, total - BATCH)
    redone = {(r.domain, r.task_id, r.trial_index) for r in resumed}
    assert redone.isdisjoint(before) and len(redone) == total - BATCH  # exactly the missing ones
    after = _keys(db, run.id)
    assert len(after) == len(set(after)) == total  # none lost, none twice
    assert store.run(run.id).status == "complete"

    never_killed = evaluate(db=f"sqlite:///{tmp_path}/clean.db", **OPTIONS)
    assert never_killed.outcome.run_id == run.id  # the same identity
    assert again.summary.overall.pass_hat == never_killed.summary.overall.pass_hat
    assert again.summary.overall.attribution == never_killed.summary.overall.attribution


def test_ctrl_c_commits_every_trial_handed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupt is no kill: the batch still gathering is committed before the run stops."""
    monkeypatch.setattr(commits, "GATHER_S", 60.0)  # without the interrupt, nothing would be written yet
    db = f"sqlite:///{tmp_path}/runs.db"
    seen: list[TrialRecord] = []

    def on_trial(record: TrialRecord) -> None:
        seen.append(record)
        if len(seen) == 3:
            raise KeyboardInterrupt

    from castbench._base.errors import RunInterrupted

    with pytest.raises(RunInterrupted):
        evaluate(db=db, on_trial=on_trial, **OPTIONS)
    (run,) = ResultsStore(db).runs()
    assert sorted(_keys(db, run.id)) == sorted((r.domain, r.task_id, r.trial_index) for r in seen)


def test_a_store_error_in_the_writer_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    def full(self: ResultsStore, *args: object, **kwargs: object) -> list[TrialRecord | None]:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(ResultsStore, "add_trials", full)
    db = f"sqlite:///{tmp_path}/runs.db"
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        evaluate(db=db, **OPTIONS)
    (run,) = ResultsStore(db).runs()
    assert run.status == "failed"
