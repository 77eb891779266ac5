"""The store: a re-run of the same configuration resumes its run and only runs what is missing;
a trial is never stored twice; an errored try is replaced by its scored retry."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from castbench._records.store import ResultsStore, StoreError
from castbench._run.api import build_config
from castbench._run.engine import run_eval
from tests.support import sqlite_url

TASKS = ["retail-test-0001", "retail-test-0002", "retail-test-0003"]


def _config(**options):  # type: ignore[no-untyped-def]
    return build_config(domains="retail", policy="scripted:noisy", trials=3, tasks=TASKS, **options)


def _rows(path: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(path) as connection:
        return connection.execute(
            "select run_id, task_id, trial_index from trial order by 1, 2, 3"
        ).fetchall()


def test_rerun_resumes_and_reuses_everything(tmp_path: Path) -> None:
    store = ResultsStore(sqlite_url(tmp_path / "r.db"))
    config, agents = _config()
    first = run_eval(config, agents, store)
    again = run_eval(config, agents, store)
    assert (first.resumed, first.ran, first.already_done) == (False, 9, 0)
    assert (again.run_id, again.resumed, again.ran, again.already_done) == (first.run_id, True, 0, 9)
    assert len(_rows(tmp_path / "r.db")) == 9 and len(store.runs()) == 1


def test_rerun_runs_only_the_missing_trials(tmp_path: Path) -> None:
    store = ResultsStore(sqlite_url(tmp_path / "r.db"))
    config, agents = _config()
    first = run_eval(config, agents, store)
    before = store.trials(first.run_id)
    with sqlite3.connect(tmp_path / "r.db") as connection:
        connection.execute("delete from trial where trial_index = 1 or task_id = ?", (TASKS[0],))
    seen: list[tuple[str, int]] = []
    again = run_eval(config, agents, store, on_trial=lambda r: seen.append((r.task_id, r.trial_index)))
    assert again.resumed and again.already_done == 4 and again.ran == 5
    assert sorted(seen) == sorted({(TASKS[0], i) for i in range(3)} | {(t, 1) for t in TASKS})
    after = store.trials(first.run_id)
    assert [(r.task_id, r.trial_index, r.seed, r.reward) for r in after] == [
        (r.task_id, r.trial_index, r.seed, r.reward) for r in before
    ]


def test_another_config_is_another_run_and_fresh_starts_over(tmp_path: Path) -> None:
    store = ResultsStore(sqlite_url(tmp_path / "r.db"))
    config, agents = _config()
    first = run_eval(config, agents, store)
    other_config, other_agents = _config(seed=1)
    other = run_eval(other_config, other_agents, store)
    fresh = run_eval(config, agents, store, fresh=True)
    assert len({first.run_id, other.run_id, fresh.run_id}) == 3
    assert fresh.run_id.startswith(first.run_id) and not fresh.resumed and fresh.ran == 9
    assert store.run("latest").id == fresh.run_id
    assert len(_rows(tmp_path / "r.db")) == 27


def test_a_trial_is_never_stored_twice(db_url: str) -> None:
    store = ResultsStore(db_url)
    config, agents = _config()
    outcome = run_eval(config, agents, store)
    record = store.trials(outcome.run_id)[0]
    store.add_trial(outcome.run_id, record.model_copy(update={"reward": 0.5}))
    assert store.count_trials(outcome.run_id) == 9
    assert store.trials(outcome.run_id)[0].reward == record.reward


def test_an_errored_try_is_replaced_by_its_scored_retry(db_url: str) -> None:
    store = ResultsStore(db_url)
    config, agents = _config()
    template = store.trials(run_eval(config, agents, store).run_id)[0]
    run_id, resumed = store.open_run(config, {}, fresh=True)
    assert not resumed
    errored = template.model_copy(
        update={"status": "error", "reward": None, "end_reason": "infra_error", "attempts": 3}
    )
    store.add_trial(run_id, errored)
    assert store.scored_keys(run_id) == set() and store.count_trials(run_id) == 1
    store.add_trial(run_id, template)
    (stored,) = store.trials(run_id)
    assert stored.status == "scored" and stored.attempts == 4
    assert store.scored_keys(run_id) == {("retail", template.task_id, template.trial_index)}


def test_run_references(db_url: str) -> None:
    store = ResultsStore(db_url)
    with pytest.raises(StoreError, match="no run 'latest'"):
        store.run("latest")
    config, agents = _config()
    first = run_eval(config, agents, store)
    second = run_eval(config, agents, store, fresh=True)
    assert store.run(first.run_id).id == first.run_id  # an exact id wins over a prefix of another
    assert store.run(second.run_id[:-1]).id == second.run_id  # a unique prefix
    with pytest.raises(StoreError, match="is ambiguous"):
        store.run("r-")
    with pytest.raises(StoreError, match="no run 'zzz'"):
        store.run("zzz")
    assert store.config(first.run_id) == config
