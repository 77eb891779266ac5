"""`eval --add-trials N`: a stored run gets trials n+1..n+N of every task with fresh seeds, keeps
its id, and pass^k is re-estimated on all of them, up to a cap."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench._run.topup import TopUpError

TASKS = ["retail-test-0001", "retail-test-0004"]
OPTIONS = {"domains": "retail", "policy": "scripted:noisy?p=0.3", "tasks": TASKS, "seed": 7}


def test_topping_up_adds_fresh_trials_to_the_same_run(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    first = evaluate(db=db, trials=2, **OPTIONS)  # type: ignore[arg-type]
    topped = evaluate(db=db, trials=2, add_trials=3, **OPTIONS)  # type: ignore[arg-type]
    assert topped.outcome.run_id == first.outcome.run_id and topped.outcome.resumed
    assert topped.outcome.ran == 3 * len(TASKS) and topped.outcome.already_done == 2 * len(TASKS)
    store = ResultsStore(db)
    records = store.trials(first.outcome.run_id)
    assert sorted({r.trial_index for r in records}) == [0, 1, 2, 3, 4]
    assert len({r.seed for r in records}) == 5 * len(TASKS)  # every trial its own seed
    assert topped.summary.config.trials == 5 and topped.summary.overall.trials_per_task == 5
    assert topped.summary.status == "complete" and 5 in topped.summary.overall.pass_hat
    assert store.config(first.outcome.run_id).trials == 5
    again = evaluate(db=db, trials=5, **OPTIONS)  # type: ignore[arg-type]
    assert again.outcome.run_id == first.outcome.run_id and again.outcome.ran == 0


def test_the_cap_holds(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    evaluate(db=db, trials=2, **OPTIONS)  # type: ignore[arg-type]
    capped = evaluate(db=db, trials=2, add_trials=10, max_trials=4, **OPTIONS)  # type: ignore[arg-type]
    assert capped.summary.config.trials == 4
    with pytest.raises(TopUpError, match="already has 4 trials per task"):
        evaluate(db=db, trials=2, add_trials=1, max_trials=4, **OPTIONS)  # type: ignore[arg-type]


def test_nothing_to_top_up_is_a_clear_error(tmp_path: Path) -> None:
    args = [
        "eval",
        "--domain",
        "retail",
        "--tasks",
        TASKS[0],
        "--add-trials",
        "2",
        "--db",
        f"sqlite:///{tmp_path / 'x.db'}",
    ]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 2 and "no stored run with these options" in " ".join(result.output.split())
