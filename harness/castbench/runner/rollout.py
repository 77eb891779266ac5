"""The engine's driver of a trial: an `Episode` (see `castbench.runner.episode`) stepped with the
actions of the policy it holds, until the user stops, a tool ends the conversation, or a limit
is hit; then graded.

    user opens
    loop until the trial is over:
        the policy proposes an action                     (it sees a PolicyView)
        the episode steps it: the critic verifies it, up to `rounds` times (a rejection gives
        the policy a revision view), then the action executes
    grade the final state against the expected state

An agent service (`--policy http://...`) holds its policy itself: the run's execution plan gives
it the service transport (`castbench.agents.transports.service`), which drives the same `Episode`
with the tool calls arriving over MCP and the replies over HTTP. Every other driver (the MCP
server, the trainers' `Environment`) steps it too, so there is one rollout path.
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from castbench.agents.transports import DrivingTransport, connect
from castbench.domain import Database, Domain, Task
from castbench.grading import GradingMode
from castbench.models.settings import ModelSettings
from castbench.records.execution import ExecutionPlan
from castbench.records.perturbations import Perturbations
from castbench.records.trial import TrialRecord
from castbench.runner.deadline import Halt, TimeLimits
from castbench.runner.episode import AgentSet, Episode, Limits, Overrule, Verification
from castbench.runner.execution import plan_execution

__all__ = ["AgentSet", "Limits", "TimeLimits", "Verification", "run_trial"]


def run_trial(
    domain: Domain,
    task: Task,
    trial_index: int,
    seed: int,
    agents: AgentSet,
    expected: Database,
    limits: Limits | None = None,
    verification: Verification | None = None,
    traits: dict[str, str] | None = None,
    time_limits: TimeLimits | None = None,
    stop: Halt | None = None,
    grading: GradingMode = "castbench",
    perturbations: Perturbations | None = None,
    plan: ExecutionPlan | None = None,
    *,
    labelled: bool = True,
    overrule: Overrule | None = None,
    reply_judge: ModelSettings | None = None,
) -> TrialRecord:
    """One trial, start to grade, as the run's execution `plan` says (by default one trial at a
    time, on this thread). `Cancelled` when `stop` is set while an agent is at work (the trial is
    then dropped). `labelled`, `overrule` and `reply_judge`: as `Episode` takes them."""
    policy = agents.policy
    if policy is None:
        raise ValueError("run_trial needs a policy: drive an Episode to bring actions from outside")
    plan = plan or plan_execution(agents)
    transport = connect(policy, plan.call("policy"))
    if transport.drives:  # the agent holds the policy: the episode gets its actions from outside
        agents = replace(agents, policy=None)
    episode = Episode(
        domain,
        task,
        trial_index,
        seed,
        agents,
        expected,
        limits,
        verification,
        traits,
        time_limits,
        stop,
        grading,
        perturbations,
        plan,
        labelled=labelled,
        overrule=overrule,
        reply_judge=reply_judge,
    )
    try:
        if transport.drives:
            cast(DrivingTransport, transport).drive(episode)
        else:
            episode.play()
    finally:
        episode.close()
    return episode.record()
