"""The verification loop: rounds, what happens when they run out, which actions are verified,
what the trajectory keeps, and a critic whose own code raises.

The critic here rejects everything (`tests.critic.recording:RejectAllCritic`); the policy is the
oracle, which stands by its proposals under critique, so every revision repeats the proposal.
Task: retail-test-0002 (authenticate, look the order up, confirm, cancel it).
"""

from __future__ import annotations

from typing import Any

import pytest

from castbench._agents.registry import resolve
from castbench._base.conversation import ReplyAction, ToolCallAction, ToolResultTurn
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._run.api import evaluate
from castbench._trial.rollout import AgentSet, TrialSpec, Verification, run_trial
from castbench.domain import Domain
from tests.critic.recording import RecordingOraclePolicy, RejectAllCritic
from tests.support import sqlite_url

TASK = "retail-test-0002"
REJECT_ALL = "tests.critic.recording:RejectAllCritic"


def trial(
    retail: Domain,
    verification: Verification,
    critic: str = REJECT_ALL,
    policy: str = "tests.critic.recording:RecordingOraclePolicy",
    task_id: str = TASK,
) -> TrialRecord:
    task = retail.task(task_id)
    agents = AgentSet(  # in process: the recorders keep what they saw where the tests read it
        policy=resolve("policy", policy, in_process=True),
        user=resolve("user", "scripted"),
        critic=resolve("critic", critic, in_process=True),
    )
    RecordingOraclePolicy.instances.clear()
    RejectAllCritic.calls = 0
    return run_trial(TrialSpec(retail, task, 0, 7, agents, retail.replay(task), verification=verification))


def verdict_rounds(record: TrialRecord) -> list[list[int]]:
    return [[p.round for p in step.proposals if p.verdict is not None] for step in record.steps]


@pytest.mark.parametrize("rounds", [1, 2, 3, 5])
def test_exactly_rounds_verdicts_per_verified_step(retail: Domain, rounds: int) -> None:
    record = trial(retail, Verification(rounds=rounds))
    calls = [step for step in record.steps if isinstance(step.proposals[0].action, ToolCallAction)]
    assert calls, "no tool call was proposed"
    for step in calls:
        assert [p.round for p in step.proposals] == list(range(rounds))
        assert all(p.verdict is not None and p.verdict.flags for p in step.proposals)
    assert RejectAllCritic.calls == rounds * len(calls)


def test_on_exhausted_execute_runs_the_last_proposal(retail: Domain) -> None:
    record = trial(retail, Verification(rounds=3, on_exhausted="execute"))
    calls = [step for step in record.steps if isinstance(step.proposals[0].action, ToolCallAction)]
    for step in calls:
        assert step.action == step.proposals[-1].action
        assert isinstance(step.observation, ToolResultTurn) and not step.observation.error
    assert any(step.action.name == "cancel_pending_order" for step in calls)  # type: ignore[union-attr]
    assert record.passed  # the oracle's actions all ran despite the rejections


def test_on_exhausted_block_executes_nothing_and_tells_the_policy(retail: Domain) -> None:
    record = trial(retail, Verification(rounds=2, on_exhausted="block"))
    calls = [step for step in record.steps if isinstance(step.proposals[0].action, ToolCallAction)]
    assert len(calls) == 3  # find user, get order, cancel: each proposed, none run
    for step in calls:
        assert step.action is None
        assert isinstance(step.observation, ToolResultTurn) and step.observation.error
        assert step.observation.content.startswith("Not executed")
        assert "rejected by the test critic" in step.observation.content
    assert record.grade is not None and not record.grade.surface.made_write and not record.passed
    # the policy saw the "Not executed" error right after each blocked call
    (policy,) = RecordingOraclePolicy.instances
    blocked_seen = [
        view.conversation[-1]
        for view in policy.views
        if view.critique is None
        and isinstance(view.conversation[-1], ToolResultTurn)
        and view.conversation[-1].content.startswith("Not executed")
    ]
    assert len(blocked_seen) == len(calls)
    assert all(turn.error for turn in blocked_seen)


def test_scope_writes_verifies_only_write_calls(retail: Domain) -> None:
    record = trial(retail, Verification(rounds=2, scope="writes"))
    write_tools = {tool.name for tool in retail.toolkit if tool.writes}
    verified = [p.action for step in record.steps for p in step.proposals if p.verdict is not None]
    unverified = [p.action for step in record.steps for p in step.proposals if p.verdict is None]
    assert verified and all(isinstance(a, ToolCallAction) and a.name in write_tools for a in verified)
    assert any(isinstance(a, ToolCallAction) and a.name not in write_tools for a in unverified)
    assert any(isinstance(a, ReplyAction) for a in unverified)


def test_scope_tool_calls_skips_replies(retail: Domain) -> None:
    record = trial(retail, Verification(rounds=2, scope="tool_calls"))
    for step in record.steps:
        for proposal in step.proposals:
            assert (proposal.verdict is not None) == isinstance(proposal.action, ToolCallAction)
    assert any(isinstance(step.action, ReplyAction) for step in record.steps)


def test_scope_all_verifies_replies_too(retail: Domain) -> None:
    record = trial(retail, Verification(rounds=2, scope="all"))
    assert all(p.verdict is not None for step in record.steps for p in step.proposals)
    replies = [step for step in record.steps if isinstance(step.proposals[0].action, ReplyAction)]
    assert replies and all(len(step.proposals) == 2 for step in replies)


def test_a_blocked_reply_never_reaches_the_user(retail: Domain) -> None:
    record = trial(retail, Verification(rounds=1, scope="all", on_exhausted="block"), task_id=TASK)
    # nothing the agent says gets through, so the user never speaks again and the policy runs out
    assert all(step.action is None for step in record.steps)
    assert record.end_reason == "max_steps"
    assert not record.passed


def test_every_proposal_verdict_and_revision_is_stored_with_its_round(tmp_path: Any) -> None:
    """Through the engine and the store: the noisy policy revises for real under rejection."""
    db = sqlite_url(tmp_path / "loop.db")
    result = evaluate(
        domains="retail",
        tasks=[TASK, "retail-test-0006"],
        trials=2,
        db=db,
        policy="scripted:noisy?insist=0.5",
        critic=REJECT_ALL,
        verification=Verification(rounds=3),
    )
    records = ResultsStore(db).trials(result.outcome.run_id)
    assert len(records) == 4
    revised = insisted = 0
    for record in records:
        for step in record.steps:
            assert [p.round for p in step.proposals] == list(range(len(step.proposals)))
            if isinstance(step.proposals[0].action, ToolCallAction):
                assert len(step.proposals) == 3
                assert all(p.verdict is not None and p.label is not None for p in step.proposals)
                assert step.action == step.proposals[-1].action
                for before, after in zip(step.proposals, step.proposals[1:], strict=False):
                    if before.action == after.action:
                        insisted += 1
                    else:
                        revised += 1
    assert revised > 0 and insisted > 0
    summary = result.summary.domains["retail"].critic
    assert summary is not None and summary.rounds_mean is not None and summary.rounds_mean > 1


def test_a_critic_that_raises_ends_the_trial_as_agent_error(retail: Domain, tmp_path: Any) -> None:
    record = trial(retail, Verification(), critic="tests.critic.recording:RaisingCritic")
    assert record.end_reason == "agent_error" and record.status == "scored" and not record.passed
    assert (
        record.error is not None
        and "critic raised" in record.error
        and "the team's critic has a bug" in record.error
    )
    # through the engine: recorded and summarised, not a crash
    db = sqlite_url(tmp_path / "raise.db")
    result = evaluate(
        domains="retail",
        tasks=[TASK],
        trials=2,
        db=db,
        policy="oracle",
        critic="tests.critic.recording:RaisingCritic",
    )
    stored = ResultsStore(db).trials(result.outcome.run_id)
    assert [r.end_reason for r in stored] == ["agent_error", "agent_error"]
    assert result.summary.domains["retail"].end_reasons == {"agent_error": 2}
    assert result.summary.domains["retail"].pass_hat[1] == 0.0
