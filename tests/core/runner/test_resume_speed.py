"""What a re-run costs: a resume of a complete run runs no trial, and the reference floors of a
run's tasks are read back from the store instead of re-running the floor policies."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._records.store import ResultsStore
from castbench._results.report.kept import kept_summary
from castbench._results.report.summary import RunSummary
from castbench._run import floors
from castbench._run.api import evaluate
from castbench._run.work import TrialWork

OPTIONS = {"domains": "retail", "trials": 2, "tasks": ["retail-test-0001", "retail-test-0002"]}


def _no_work(*_: object, **__: object) -> None:
    raise AssertionError("work was redone")


def test_a_complete_run_resumes_without_trials_or_floors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{tmp_path}/runs.db"
    first = evaluate(db=db, policy="oracle", **OPTIONS)
    assert first.outcome.ran == 4 and first.summary.floors is not None
    floors._floors.cache_clear()  # a new process: nothing in memory
    monkeypatch.setattr(TrialWork, "run", _no_work)
    monkeypatch.setattr(floors, "_floors", _no_work)
    monkeypatch.setattr(ResultsStore, "trials", _no_work)  # the summary is read back too
    again = evaluate(db=db, policy="oracle", **OPTIONS)
    assert (again.outcome.resumed, again.outcome.ran, again.outcome.already_done) == (True, 0, 4)
    assert again.summary == first.summary


def test_a_kept_summary_is_derived_again_once_a_trial_is_stored(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.db"
    result = evaluate(db=db, policy="oracle", **OPTIONS)
    store, run_id = ResultsStore(db), result.outcome.run_id
    config = store.config(run_id)
    derived: list[int] = []

    def summarize() -> RunSummary:
        derived.append(1)
        return result.summary

    assert kept_summary(store, run_id, config, "complete", summarize) is not result.summary  # read back
    assert derived == []
    stored = store.trials(run_id)[0]
    store.add_trial(run_id, stored.model_copy(update={"trial_index": 5}))
    kept_summary(store, run_id, config, "complete", summarize)
    kept_summary(store, run_id, config, "incomplete", summarize)
    assert len(derived) == 2


def _floor_rows(db: str) -> int:
    (count,) = ResultsStore(db).db.one("SELECT COUNT(*) FROM cache WHERE kind = 'floors'") or (0,)
    return int(count)


def test_floors_are_shared_by_agents_on_the_same_tasks_and_not_across_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{tmp_path}/runs.db"
    oracle = evaluate(db=db, policy="oracle", **OPTIONS).summary.floors
    assert _floor_rows(db) == 1
    other = evaluate(db=db, policy="scripted:refuse", **OPTIONS).summary.floors
    assert other == oracle and _floor_rows(db) == 1  # another agent, the same tasks: read back
    evaluate(db=db, policy="oracle", **{**OPTIONS, "trials": 3})
    assert _floor_rows(db) == 2  # other trials per task: other floors
    monkeypatch.setattr(floors, "code_digest", lambda domains: "changed code")
    assert evaluate(db=db, policy="oracle", fresh=True, **OPTIONS).summary.floors == oracle
    assert _floor_rows(db) == 3  # castbench's or a domain's code changed: computed again
