"""Trials run concurrently are the same trials: record for record, a run with 8 (or 32) workers
stores exactly what the sequential run stores, timings aside."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._run.api import build_config
from castbench._run.engine import run_eval
from tests.support import sqlite_url, without_durations

pytestmark = pytest.mark.slow  # the same runs sequentially and with 8 and 32 workers

TASKS = [f"retail-test-{i:04d}" for i in range(1, 121, 3)]


def _run(tmp_path: Path, name: str, concurrency: int, critic: str) -> list[TrialRecord]:
    config, agents = build_config(
        domains="retail", policy="scripted:noisy?p=0.4", critic=critic, trials=4, seed=3, tasks=TASKS
    )
    store = ResultsStore(sqlite_url(tmp_path / name))
    outcome = run_eval(config, agents, store, concurrency=concurrency)
    assert outcome.ran == outcome.total == 4 * len(TASKS)
    assert store.count_trials(outcome.run_id) == outcome.total
    return store.trials(outcome.run_id)


@pytest.mark.parametrize(("concurrency", "critic"), [(8, "none"), (32, "scripted:noisy")])
def test_concurrent_run_equals_sequential_run(tmp_path: Path, concurrency: int, critic: str) -> None:
    sequential = _run(tmp_path, "sequential.db", 1, critic)
    concurrent = _run(tmp_path, "concurrent.db", concurrency, critic)
    assert len(sequential) == len(concurrent) == 4 * len(TASKS)
    assert 0 < sum(r.passed for r in sequential) < len(sequential)  # mistakes were made and caught
    for one, other in zip(sequential, concurrent, strict=True):
        assert (one.task_id, one.trial_index) == (other.task_id, other.trial_index)
        assert without_durations(one.model_dump(mode="json")) == without_durations(
            other.model_dump(mode="json")
        ), f"{one.task_id} #{one.trial_index} differs under concurrency"
