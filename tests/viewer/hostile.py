"""A real run whose trajectories carry markup: what a model, a user or a tool might write."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from castbench._base.conversation import ReplyAction, ToolResultTurn
from castbench._grading.state_diff import FieldDiff
from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._run.api import evaluate
from tests.support import sqlite_url

SCRIPT = "<script>window.__pwned = 1</script>"
IMAGE = '<img src="x" onerror="window.__pwned = 1">'
EVIL = f"{SCRIPT}{IMAGE}"
TASKS = ["retail-test-0004", "retail-test-0005"]


@dataclass(frozen=True)
class HostileRun:
    db: str
    run_id: str
    config: RunConfig
    records: list[TrialRecord]
    """The stored records with markup injected into every kind of text the page shows."""


def poison(record: TrialRecord) -> TrialRecord:
    steps = []
    for step in record.steps:
        update: dict[str, object] = {}
        if isinstance(step.observation, ToolResultTurn):
            update["observation"] = step.observation.model_copy(update={"content": EVIL})
        if isinstance(step.action, ReplyAction):
            update["action"] = ReplyAction(text=f"{EVIL} {step.action.text}")
        update["proposals"] = [
            p.model_copy(
                update={"verdict": p.verdict.model_copy(update={"explanation": EVIL, "suggested_fix": EVIL})}
            )
            if p.verdict is not None
            else p
            for p in step.proposals
        ]
        steps.append(step.model_copy(update=update))
    grade = record.grade
    if grade is not None and not record.passed:
        diff = [
            *grade.diff,
            FieldDiff(table="orders", key=EVIL, field="status", expected=EVIL, got="cancelled"),
        ]
        grade = grade.model_copy(update={"diff": diff})
    return record.model_copy(update={"opening": f"{EVIL} {record.opening}", "steps": steps, "grade": grade})


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> HostileRun:
    db = sqlite_url(tmp_path_factory.mktemp("hostile") / "runs.db")
    result = evaluate(
        db=db,
        domains="retail",
        policy="scripted:noisy?p=0.5",
        critic="scripted:noisy?false_flag=0.5&miss=0.8",
        trials=3,
        seed=0,
        tasks=TASKS,
    )
    store = ResultsStore(db)
    run_id = result.outcome.run_id
    config = store.config(run_id).model_copy(update={"policy": f"team.agent:Policy?note={SCRIPT}"})
    records = [poison(record) for record in store.trials(run_id)]
    assert any(r.passed for r in records) and any(not r.passed for r in records)
    return HostileRun(db=db, run_id=run_id, config=config, records=records)
