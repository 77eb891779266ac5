"""Whose fault is it: an agent's bad calls are observations and the trial goes on; a policy that
raises fails its trial; a tool that crashes is a harness error, stored but never scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from castbench._base.conversation import ToolCallAction
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench._trial.rollout import Limits
from tests.core.toy import build_toy_domain, register_toy, toy_task
from tests.support import sqlite_url

POLICY = "tests.core.fixtures_agents:ScriptPolicy"

BAD_CALLS = [
    ["frobnicate", {}],
    ["add", '{"name": "x", '],
    ["add", {"name": "x"}],
    ["add", {"name": "x", "amount": "lots"}],
    ["add", {"name": "x", "amount": 1, "colour": "red"}],
    ["add", {"name": "x", "amount": -100}],
]


@pytest.fixture
def toy_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    tasks = [
        toy_task("toy-bad", [], outcome="no_change", request="CALL " + json.dumps(BAD_CALLS)),
        toy_task(
            "toy-crash",
            [{"name": "add", "arguments": {"name": "x", "amount": 1}}],
            request="CALL " + json.dumps([["add", {"name": "x", "amount": 1}], ["crash", {"name": "x"}]]),
        ),
        toy_task("toy-raise", [], outcome="no_change", request="RAISE please"),
        toy_task("toy-garbage", [], outcome="no_change", request="GARBAGE please"),
    ]
    register_toy(monkeypatch, build_toy_domain(tmp_path / "toy", tasks))
    return sqlite_url(tmp_path / "results.db")


def _records(db: str, task: str, trials: int = 2, max_steps: int = 10):  # type: ignore[no-untyped-def]
    result = evaluate(
        domains="toy", policy=POLICY, trials=trials, tasks=[task], db=db, limits=Limits(max_steps=max_steps)
    )
    return result, ResultsStore(db).trials(result.outcome.run_id)


def test_bad_calls_are_observations_and_the_trial_goes_on(toy_db: str) -> None:
    result, records = _records(toy_db, "toy-bad")
    assert len(records) == 2
    for record in records:
        assert record.status == "scored" and record.end_reason == "user_stop" and record.error is None
        results = [step.observation for step in record.steps[: len(BAD_CALLS)]]
        assert all(r is not None and r.role == "tool" and r.error for r in results)
        contents = [r.content for r in results]  # type: ignore[union-attr]
        assert "unknown tool 'frobnicate'. Available tools: get_counter, add" in contents[0]
        assert "not valid JSON" in contents[1]
        assert "missing argument 'amount'" in contents[2]
        assert "argument 'amount'" in contents[3]
        assert "unknown argument 'colour'" in contents[4]
        assert "cannot go below zero" in contents[5]
        assert isinstance(record.steps[1].action, ToolCallAction)
        assert record.steps[1].action.arguments == '{"name": "x", '  # kept as the agent sent it
        assert record.grade is not None and record.grade.surface.saw_tool_error
        assert record.reward == 1.0  # nothing was to change, nothing changed
    assert result.summary.domains["toy"].pass_hat[2] == 1.0


def test_a_crashing_tool_is_a_harness_error_not_a_score(toy_db: str) -> None:
    result, _ = _records(toy_db, "toy-crash")
    assert result.summary.status == "incomplete" and result.outcome.unscored == 2
    store = ResultsStore(toy_db)
    run = store.run("latest")
    records = store.trials(run.id)
    assert len(records) == 2
    for record in records:
        assert record.status == "error" and record.end_reason == "harness_error"
        assert record.reward is None and record.grade is None and not record.passed
        assert record.error is not None and "tool crash crashed" in record.error
        assert "ZeroDivisionError" in record.error
        assert len(record.steps) == 1  # the add before the crash ran; the crash never became a step
    assert store.scored_keys(run.id) == set() and run.status == "incomplete"


def test_an_errored_task_is_reported_incomplete_beside_scored_ones(toy_db: str) -> None:
    result = evaluate(
        domains="toy",
        policy=POLICY,
        trials=2,
        tasks=["toy-bad", "toy-crash"],
        db=toy_db,
        limits=Limits(max_steps=5),
    )
    report = result.summary.domains["toy"]
    assert report.incomplete_tasks == report.missing_tasks == ["toy-crash"]
    assert report.errored_trials == 2 and report.end_reasons["harness_error"] == 2
    # every planned task stays in pass^k: the one without a scored trial counts as failed
    assert list(report.per_task) == ["toy-bad", "toy-crash"] and report.per_task["toy-crash"].successes == 0
    assert report.n_tasks == 2 and report.unscored_trials == 2
    assert report.pass_hat_conservative == report.pass_hat  # toy-bad is complete, toy-crash failed
    assert result.summary.status == "incomplete"
    assert "toy-crash" in (result.summary.incomplete_reason() or "")
    assert any("toy-crash" in warning for warning in result.summary.warnings)


def test_a_policy_that_raises_ends_its_trial_as_agent_error(toy_db: str) -> None:
    _, records = _records(toy_db, "toy-raise")
    for record in records:
        assert record.status == "scored" and record.end_reason == "agent_error"
        assert record.error is not None and "the team's policy has a bug" in record.error
        assert record.steps == []


def test_a_policy_that_raises_fails_its_trial(toy_db: str) -> None:
    result, records = _records(toy_db, "toy-raise")
    assert [record.reward for record in records] == [0.0, 0.0]
    assert result.summary.domains["toy"].pass_hat[1] == 0.0


def test_output_that_is_no_action_ends_its_trial_as_agent_error(toy_db: str) -> None:
    """A policy's code returning a dict (or None) is a bug: agent_error at once, as the README
    says, not a malformed action retried until the step limit (that is a model's unparseable
    output)."""
    _, records = _records(toy_db, "toy-garbage", trials=1, max_steps=5)
    (record,) = records
    assert record.status == "scored" and record.reward == 0.0
    assert record.end_reason == "agent_error" and record.steps == []
    assert "policy returned dict from action, not ToolCallAction or ReplyAction" in (record.error or "")
