"""The step-wise `Environment`: a trainer's loop over the same episode `eval` runs, with the
same trial seed, the same observations and the same grade."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._agents.scripted.refusers import LookupRefusePolicy
from castbench._agents.views import Briefing, PrivilegedBriefing
from castbench._base.conversation import CritiqueTurn, ToolCallAction
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench._run.environment import Environment, EpisodeOver
from castbench._trial.episode import Verification
from tests.support import sqlite_url

TASK = "retail-test-0008"  # lookup-refuse earns this refusal: the grade is a pass, not a zero


def test_environment_drives_a_trial_to_the_grade_eval_gives(tmp_path: Path) -> None:
    env = Environment(labels=True)
    view = env.reset("retail", TASK, trial=1, seed=11)
    assert view is not None
    assert type(view.briefing) is Briefing and not isinstance(view.briefing, PrivilegedBriefing)
    policy = LookupRefusePolicy(view.briefing)
    labels = []
    while True:
        result = env.step(policy.propose(view))
        labels.append(result.label)
        if result.done:
            break
        assert result.view is not None and result.reward is None
        view = result.view
    assert result.record is not None and result.reward == result.record.reward == 1.0
    assert all(label is not None for label in labels)
    db = sqlite_url(tmp_path / "results.db")
    run = evaluate(db=db, domains="retail", policy="scripted:lookup-refuse", trials=2, tasks=[TASK], seed=11)
    stored = next(r for r in ResultsStore(db).trials(run.outcome.run_id) if r.trial_index == 1)
    assert stored.seed == result.record.seed
    assert [s.action for s in stored.steps] == [s.action for s in result.record.steps]
    assert [s.observation for s in stored.steps] == [s.observation for s in result.record.steps]
    assert (stored.end_reason, stored.reward) == (result.record.end_reason, result.record.reward)
    with pytest.raises(EpisodeOver):
        env.step(policy.propose(view))


def test_a_rejection_gives_a_revision_view_ending_in_the_critique() -> None:
    env = Environment(critic="tests.critic.recording:RejectAllCritic", verification=Verification(rounds=2))
    view = env.reset("retail", "retail-test-0002")
    assert view is not None
    call = ToolCallAction(name="find_user_id_by_email", arguments={"email": "someone@example.com"})
    first = env.step(call)
    assert not first.done and first.view is not None
    assert isinstance(first.observation, CritiqueTurn) and first.view.critique is first.observation
    second = env.step(call)  # rounds spent: it executes
    assert second.view is not None and second.view.critique is None
    assert env.episode is not None and [p.round for p in env.episode.steps[0].proposals] == [0, 1]
