"""The step time limit holds the agent under test, not castbench's scripted user: `--step-timeout
1` left every trial of 3 runs unscored, the user's answer checked against a deadline the
policy's step had used up."""

from __future__ import annotations

from castbench._agents.registry import resolve
from castbench._base.conversation import ReplyAction, UserTurn
from castbench._trial.deadline import TimeLimits
from castbench._trial.episode import AgentSet, Episode, Limits
from castbench._trial.spec import TrialRuntime, TrialSpec
from castbench.domain import Domain


def test_the_scripted_user_is_never_timed_out_by_the_policys_step(retail: Domain) -> None:
    task = retail.task("retail-test-0002")
    agents = AgentSet(None, resolve("user", "scripted"), None)
    limits = TimeLimits(step_s=1.0, trial_s=None)
    spec = TrialSpec(retail, task, 0, 1, agents, retail.replay(task), Limits())
    episode = Episode(spec, TrialRuntime(time_limits=limits))
    assert episode.reset() is not None
    episode.step_started -= 30  # the policy spent its whole step (and more) on this reply
    outcome = episode.step(ReplyAction(text="Could you tell me your order id?"), policy_s=0.9)
    assert isinstance(outcome.observation, UserTurn) and not episode.done, episode.error
    record = episode.record()
    assert record.status == "scored"
