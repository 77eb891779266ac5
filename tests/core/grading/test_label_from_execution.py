"""The labeler's run of a tool call on a copy of the state is the step's execution (issue 40): a
write runs once per step, not once for its label and again for real, and the trial's state,
labels and grades are what running it twice gave."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from castbench._records.store import ResultsStore
from castbench._run.api import build_config
from castbench._run.engine import run_eval
from castbench.domain import Database, Domain, Toolkit, load_domain
from castbench_retail.schema import Order

TASKS = [f"retail-test-{index:04d}" for index in range(1, 121, 15)]


def _some_order(db: Database) -> Order:
    return next(order for order in db.scan(Order) if order.items)


def test_adopting_a_fork_takes_its_writes_and_only_a_fork_can_be_adopted(retail: Domain) -> None:
    db = retail.fresh_database()
    order = _some_order(db)
    start = db.version
    twin = db.fork()
    twin.put(order.model_copy(update={"status": "cancelled"}))
    assert db.version == start  # the twin's writes are its own until adopted
    assert db.get(Order, order.order_id).status == order.status
    db.adopt(twin)
    assert db.get(Order, order.order_id).status == "cancelled"
    assert db.version > start
    db.put(order)
    assert db.get(Order, order.order_id) == order
    with pytest.raises(ValueError, match="not a fork"):
        db.adopt(Database({}, db.now))


def _run(tmp_path: Path, name: str, **options: Any) -> list[Any]:
    config, agents = build_config(domains="retail", trials=2, seed=5, tasks=TASKS, **options)
    store = ResultsStore(f"sqlite:///{tmp_path}/{name}.db")
    return store.trials(run_eval(config, agents, store).run_id)


def test_a_labelled_write_runs_once_and_grades_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[str] = []
    real = Toolkit._run

    def counting(db: Database, tool: Any, values: dict[str, Any]) -> Any:
        if tool.writes:
            writes.append(tool.name)
        return real(db, tool, values)

    monkeypatch.setattr(Toolkit, "_run", staticmethod(counting))
    records = _run(tmp_path, "oracle", policy="oracle")
    executed = [
        step.action.name
        for record in records
        for step in record.steps
        if getattr(step.action, "name", None) in _write_tools()
    ]
    assert executed, "the sample must hold writes"
    domain = load_domain("retail")
    replayed = [  # the expected state of each task: its ground truth replayed once
        call.name
        for task_id in {record.task_id for record in records}
        for call in domain.task(task_id).actions
        if call.name in _write_tools()
    ]
    # once each: the labeler's run was the execution (it ran twice before)
    assert sorted(writes) == sorted(executed + replayed)
    assert all(record.reward == 1.0 and record.grade.strict_reward == 1.0 for record in records)
    labels = [p.label.label for r in records for s in r.steps for p in s.proposals if p.label]
    assert labels and "invalid" not in labels


def _write_tools() -> set[str]:
    return {tool.name for tool in load_domain("retail").toolkit if tool.writes}


def test_a_critics_revision_executes_on_the_true_state(tmp_path: Path) -> None:
    """With a critic that sends proposals back, the executed action is not always the one
    labelled first: every executed call still answered what it answers on the true state."""
    domain = load_domain("retail")
    records = _run(tmp_path, "critic", policy="scripted:noisy?p=0.5", critic="rules")
    revised = [s for r in records for s in r.steps if len(s.proposals) > 1]
    assert revised, "the sample must hold revisions"
    for record in records:
        db = domain.fresh_database()
        for step in record.steps:
            action = step.action
            if action is not None and getattr(action, "arguments", None) is not None:
                observation = domain.toolkit.call(db, action.name, action.arguments)
                assert observation.content == step.observation.content, (record.task_id, step.index)
