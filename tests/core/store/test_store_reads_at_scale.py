"""The store's read paths that keep 100k-trial runs linear (issue 40, bench/scale_trials.py):
one task's trials read alone, records streamed a batch at a time, and the commands built on
them printing exactly what they printed when they loaded the whole run."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from castbench._records.store import ResultsStore, StoreError
from castbench._run.api import build_config
from castbench._run.engine import run_eval
from tests.support import invoke, sqlite_url

TASKS = ["retail-test-0001", "retail-test-0002", "retail-test-0003", "retail-test-0004"]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("reads") / "runs.db"
    config, agents = build_config(domains="retail", policy="scripted:noisy", trials=3, tasks=TASKS, seed=3)
    outcome = run_eval(config, agents, ResultsStore(sqlite_url(path)))
    return path, outcome.run_id


def _keys(records: list) -> list[tuple[str, str, int]]:  # type: ignore[type-arg]
    return [(r.domain, r.task_id, r.trial_index) for r in records]


def test_one_tasks_trials_are_the_runs_trials_of_that_task(stored: tuple[Path, str]) -> None:
    path, run_id = stored
    store = ResultsStore(sqlite_url(path), read_only=True)
    everything = store.trials(run_id)
    assert len(everything) == 12
    for task in TASKS:
        expected = [r for r in everything if r.task_id == task]
        assert store.trials(run_id, task_id=task) == expected
        assert store.trials(run_id, task_id=task, trial_index=1) == [
            r for r in expected if r.trial_index == 1
        ]
    assert store.trials(run_id, task_id="retail-test-9999") == []


def test_streamed_records_are_the_listed_records_in_order(stored: tuple[Path, str]) -> None:
    path, run_id = stored
    store = ResultsStore(sqlite_url(path), read_only=True)
    listed = store.trials(run_id)
    streamed = list(store.iter_trials(run_id, batch=5))  # batches that do not divide the run
    assert streamed == listed
    assert _keys(streamed) == sorted(_keys(streamed))


def test_a_damaged_row_streams_the_others_then_names_it(tmp_path: Path, stored: tuple[Path, str]) -> None:
    path, run_id = stored
    copy = tmp_path / "damaged.db"
    with sqlite3.connect(path) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # the store is in WAL mode: its file alone may not hold the trials
    with sqlite3.connect(copy) as connection:
        connection.execute(
            "UPDATE trial SET record_json = '{\"broken' WHERE task_id = ? AND trial_index = 2", (TASKS[1],)
        )
    store = ResultsStore(sqlite_url(copy), read_only=True)
    seen = []
    with pytest.raises(
        StoreError, match=rf"1 stored trial\(s\) do not read.*{TASKS[1]} trial 2.*other 11 of 12"
    ):
        for record in store.iter_trials(run_id, batch=3):
            seen.append(record)
    assert len(seen) == 11
    with pytest.raises(StoreError, match="other 11 of 12"):
        store.trials(run_id)


def _ok(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.output


def test_runs_show_of_one_trial_prints_that_trial_as_before(stored: tuple[Path, str]) -> None:
    """`--task` now reads the task alone: the same lines as the trial printed from the whole run."""
    path, run_id = stored
    from io import StringIO

    from rich.console import Console

    from castbench._results.report.tables import print_trial

    store = ResultsStore(sqlite_url(path), read_only=True)
    record = next(r for r in store.trials(run_id) if r.task_id == TASKS[2] and r.trial_index == 1)
    buffer = StringIO()
    print_trial(record, Console(file=buffer, width=200))
    shown = _ok("runs", "show", run_id, "--task", TASKS[2], "--trial", "1", "--db", str(path))
    assert shown == buffer.getvalue()
    every = _ok("runs", "show", run_id, "--task", TASKS[2], "--db", str(path))
    assert every.count(f"{TASKS[2]} #") == 3


def test_details_marks_each_tasks_trials_in_order(stored: tuple[Path, str]) -> None:
    path, run_id = stored
    store = ResultsStore(sqlite_url(path), read_only=True)
    records = store.trials(run_id)
    out = _ok("runs", "show", run_id, "--details", "--db", str(path))
    for task in TASKS:
        row = next(line for line in out.splitlines() if task in line and "●" in line)
        passed = sum(r.passed for r in records if r.task_id == task)
        assert re.search(rf"{passed}/3\s.*\s●●●", row), row


def test_runs_why_from_streamed_records_names_every_failure(stored: tuple[Path, str]) -> None:
    import json

    path, run_id = stored
    store = ResultsStore(sqlite_url(path), read_only=True)
    failed = [(r.task_id, r.trial_index) for r in store.trials(run_id) if not r.passed]
    assert failed  # the noisy policy fails some: the test has something to name
    rows = json.loads(_ok("runs", "why", run_id, "--json", "--db", str(path)))
    plain = [row for row in rows if row.get("grading", "plain") == "plain"]  # strict failures follow
    assert [(row["task"], row["trial"]) for row in plain] == failed


def test_trials_are_counted_by_the_database(stored: tuple[Path, str]) -> None:
    path, run_id = stored
    store = ResultsStore(sqlite_url(path), read_only=True)
    assert store.count_trials(run_id) == len(store.trials(run_id)) == 12
    assert store.count_trials("r-none") == 0
