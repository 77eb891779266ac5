"""The noisy policy makes seeded mistakes: reliability falls with k, the same seed gives the same
figures in a fresh run, another seed gives other figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._records.store import ResultsStore
from castbench._run.api import EvalResult, evaluate
from tests.support import sqlite_url

TASKS = [f"retail-test-{i:04d}" for i in range(1, 121, 2)]
"""Every other retail test task (60 of them): enough for the figures to separate, half the time."""


def _run(tmp_path: Path, name: str, seed: int) -> EvalResult:
    return evaluate(
        domains="retail",
        policy="scripted:noisy",
        trials=8,
        seed=seed,
        tasks=TASKS,
        db=sqlite_url(tmp_path / name),
    )


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("noisy")


@pytest.fixture(scope="module")
def runs(tmp: Path) -> dict[str, EvalResult]:
    """Two runs with seed 0 in two fresh stores, one with seed 1."""
    return {"a": _run(tmp, "a.db", 0), "b": _run(tmp, "b.db", 0), "other": _run(tmp, "c.db", 1)}


def test_reliability_falls_with_k(runs: dict[str, EvalResult]) -> None:
    overall = runs["a"].summary.overall
    hat = overall.pass_hat
    assert 1.0 > hat[1] > hat[2] > hat[4] > hat[8] > 0.0
    assert all(hat[k] >= hat[k + 1] for k in range(1, 8))
    assert overall.pass_at[8] >= overall.pass_at[1] == hat[1]
    report = runs["a"].summary.domains["retail"]
    assert report.failure_categories and report.errored_trials == 0


def test_same_seed_same_figures(runs: dict[str, EvalResult]) -> None:
    a, b = runs["a"].summary, runs["b"].summary
    assert a.overall.per_task == b.overall.per_task
    assert a.domains["retail"].per_task == b.domains["retail"].per_task
    assert a.overall.pass_hat == b.overall.pass_hat and a.overall.pass_at == b.overall.pass_at
    assert a.overall.ci95 == b.overall.ci95
    assert a.domains["retail"].failure_categories == b.domains["retail"].failure_categories


def test_same_seed_same_trials(runs: dict[str, EvalResult], tmp: Path) -> None:
    first = ResultsStore(sqlite_url(tmp / "a.db")).trials(runs["a"].outcome.run_id)
    second = ResultsStore(sqlite_url(tmp / "b.db")).trials(runs["b"].outcome.run_id)
    assert [(r.task_id, r.trial_index, r.seed, r.reward) for r in first] == [
        (r.task_id, r.trial_index, r.seed, r.reward) for r in second
    ]
    assert [[s.action for s in r.steps] for r in first] == [[s.action for s in r.steps] for r in second]


def test_another_seed_other_figures(runs: dict[str, EvalResult]) -> None:
    a, other = runs["a"].summary.overall, runs["other"].summary.overall
    assert a.per_task != other.per_task
    assert a.pass_hat != other.pass_hat


def test_fresh_run_in_the_same_store_repeats_the_figures(db_url: str) -> None:
    db = db_url
    options = {"domains": "retail", "policy": "scripted:noisy?p=0.5", "trials": 3, "seed": 7, "db": db}
    tasks = [f"retail-test-{i:04d}" for i in range(1, 21)]
    first = evaluate(tasks=tasks, **options)
    second = evaluate(tasks=tasks, fresh=True, **options)
    assert first.outcome.run_id != second.outcome.run_id and second.outcome.ran == 3 * 20
    assert first.summary.overall.per_task == second.summary.overall.per_task
    assert first.summary.overall.pass_hat == second.summary.overall.pass_hat
