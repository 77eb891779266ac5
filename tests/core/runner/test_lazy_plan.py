"""A run's trial grid is produced lazily: a million trials must not build a million jobs (1.5 GB
on the whole split) before the first trial starts. The options cap what a user asks for (1,000 per
task); a run config stored by another tool or an older castbench is not capped, so the engine must
stay lazy whatever it is given."""

from __future__ import annotations

import itertools
import tracemalloc
from pathlib import Path

import pytest

from castbench._records.store import ResultsStore
from castbench._run.api import build_config
from castbench._run.engine import run_eval
from castbench._run.plan import plan_trials

MILLION = 1_000_000


class _Started(Exception):
    pass


def test_a_million_trials_are_planned_without_building_them(tmp_path: Path) -> None:
    config, agents = build_config(domains="retail", policy="oracle", tasks=["retail-test-0001"])
    config = config.model_copy(update={"trials": MILLION})
    store = ResultsStore(f"sqlite:///{tmp_path / 'runs.db'}")
    counts: list[tuple[int, int]] = []

    def started(already: int, total: int) -> None:
        counts.append((already, total))
        raise _Started

    tracemalloc.start()
    try:
        with pytest.raises(_Started):
            run_eval(config, agents, store, on_start=started)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert counts == [(0, MILLION)]
    assert peak < 32 * 1024 * 1024  # a built grid of 10^6 jobs alone takes well over 100 MB


def test_the_grid_is_an_iterator_in_task_then_trial_order() -> None:
    config, _ = build_config(domains="retail", policy="oracle", tasks=["retail-test-0002"])
    config = config.model_copy(update={"trials": MILLION})
    grid = plan_trials(config)
    first = list(itertools.islice(grid, 3))
    assert [job.trial_index for job in first] == [0, 1, 2] and iter(grid) is grid
    assert len({job.seed for job in first}) == 3
