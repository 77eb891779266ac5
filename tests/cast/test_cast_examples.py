"""Critic and policy examples: built from what the agents saw, never from privileged data."""

from __future__ import annotations

import json

import pytest

from castbench._agents.models.prompts import critic_messages, critic_system_prompt
from castbench._agents.models.render import action_json, policy_messages
from castbench._base.conversation import CritiqueTurn
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench.domain import Domain
from castbench_cast.annotations import annotated_moments, labeler_annotation
from castbench_cast.examples import POLICY_STYLE, critic_examples, policy_examples
from castbench_cast.pipeline import Pipeline
from castbench_cast.trajectories import moments
from tests.critic.recording import RecordingCritic, RecordingOraclePolicy

TASKS = ["retail-train-0001", "retail-train-0002", "retail-train-0003"]


@pytest.fixture
def critiqued(db_url: str) -> tuple[str, list]:  # type: ignore[type-arg]
    """A run where a recording critic rejects the first proposal of every write."""
    result = evaluate(
        db=db_url,
        domains="retail",
        split="train",
        tasks=TASKS,
        policy="tests.critic.recording:RecordingOraclePolicy",
        critic="tests.critic.recording:RecordingCritic",
        trials=1,
        in_process=True,
    )
    return db_url, ResultsStore(db_url).trials(result.outcome.run_id)


def test_moments_are_what_the_critic_and_the_policy_saw(critiqued: tuple[str, list]) -> None:  # type: ignore[type-arg]
    _, records = critiqued
    rebuilt = [m for record in records for m in moments(record)]
    critic_views = [view for critic in RecordingCritic.instances for view in critic.views]
    policy_views = [view for policy in RecordingOraclePolicy.instances for view in policy.views]
    assert len(rebuilt) == len(policy_views) and critic_views
    assert any(view.critique is not None for view in policy_views)  # revisions happened
    for moment, view in zip(rebuilt, policy_views, strict=True):
        assert moment.history + moment.critiques == view.conversation
    checked = [m for m in rebuilt if m.proposal.verdict is not None]
    assert len(checked) == len(critic_views)
    for moment, view in zip(checked, critic_views, strict=True):
        assert (moment.history, moment.proposal.action) == (view.conversation, view.proposal)


def test_critic_example_is_the_deployed_critics_prompt(critiqued: tuple[str, list], retail: Domain) -> None:  # type: ignore[type-arg]
    _, records = critiqued
    pairs = list(annotated_moments(records))
    annotations = {a.key: a for a in (labeler_annotation(r, m) for r, m in pairs)}
    examples = critic_examples(records, annotations)
    assert len(examples.rows) == len(pairs) > 0
    view = RecordingCritic.instances[0].views[0]
    system = critic_system_prompt(RecordingCritic.instances[0].briefing)
    expected = critic_messages(system, view.conversation, view.proposal)
    assert examples.rows[0][:-1] == expected
    target = json.loads(examples.rows[0][-1]["content"])
    assert list(target) == ["verdict", "failure_type", "check", "explanation"]  # the verdict first


def test_policy_examples_keep_critiques_unless_rft(critiqued: tuple[str, list]) -> None:  # type: ignore[type-arg]
    _, records = critiqued
    cast = policy_examples(records, rft=False)
    rft = policy_examples(records, rft=True)
    assert 0 < len(cast.rows) <= len(rft.rows)
    assert cast.balance["after_critique"]["yes"] > 0 and "yes" not in rft.balance["after_critique"]
    assert cast.counts["trajectories_with_critiques"] == cast.counts["trajectories"] > 0
    reviewer = "your proposed action was rejected"
    assert any(reviewer in m["content"] for row in cast.rows for m in row[:-1])
    assert not any(reviewer in m["content"] for row in rft.rows for m in row[:-1])
    # the example of a revised action is the policy's own prompt at that moment, and its action
    revised = [v for p in RecordingOraclePolicy.instances for v in p.views if v.critique is not None]
    record = next(r for r in records if r.passed)
    moment = next(m for m in moments(record) if m.executed and m.critiques)
    view = next(v for v in revised if v.conversation == moment.history + moment.critiques)
    prompt = policy_messages(view.briefing, view.conversation, POLICY_STYLE)
    assert [*prompt, {"role": "assistant", "content": action_json(moment.proposal.action)}] in cast.rows
    assert all(isinstance(e, CritiqueTurn) for e in moment.critiques)


def test_only_successful_trajectories_train_the_policy(pipeline: Pipeline) -> None:
    pipeline.collect()
    records = pipeline.records("collect")
    assert {r.passed for r in records} == {True, False}
    examples = policy_examples(records, rft=True)
    assert examples.counts["trajectories"] == sum(r.passed for r in records)


def test_cast_data_keeps_only_the_critique_enriched_successes(pipeline: Pipeline) -> None:
    """The paper's CAST data: successes the critic flagged at least once; a success it never
    flagged teaches what RFT teaches, so it is left out (and counted)."""
    pipeline.collect()
    records = pipeline.records("collect")  # no critic in the loop: no critique anywhere
    cast = policy_examples(records, rft=False)
    assert not cast.rows and cast.counts["skipped_without_critiques"] == sum(r.passed for r in records) > 0
