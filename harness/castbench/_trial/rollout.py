"""The engine's driver of a trial: an `Episode` (see `castbench._trial.episode`) stepped with the
actions of the policy it holds, until the user stops, a tool ends the conversation, or a limit
is hit; then graded.

    user opens
    loop until the trial is over:
        the policy proposes an action                     (it sees a PolicyView)
        the episode steps it: the critic verifies it, up to `rounds` times (a rejection gives
        the policy a revision view), then the action executes
    grade the final state against the expected state

An agent service (`--policy http://...`) holds its policy itself: the run's execution plan gives
it the service transport (`castbench._agents.transports.service`), which drives the same `Episode`
with the tool calls arriving over MCP and the replies over HTTP. Every other driver (the MCP
server, the trainers' `Environment`) steps it too, so there is one rollout path.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any, cast, overload

from castbench._agents.models.settings import ModelSettings
from castbench._agents.transports import DrivingTransport, connect
from castbench._base.deprecation import REMOVAL, CastbenchDeprecationWarning
from castbench._domain.database import Database
from castbench._domain.domain import Domain
from castbench._domain.task import Task
from castbench._grading import GradingMode
from castbench._records.execution import ExecutionPlan
from castbench._records.perturbations import Perturbations
from castbench._records.trial import TrialRecord
from castbench._trial.deadline import Halt, TimeLimits
from castbench._trial.episode import AgentSet, Episode, Limits, Overrule, Verification
from castbench._trial.execution import plan_execution
from castbench._trial.spec import DEFAULT_RUNTIME, TrialRuntime, TrialSpec

__all__ = ["AgentSet", "Limits", "TimeLimits", "TrialRuntime", "TrialSpec", "Verification", "run_trial"]


@overload
def run_trial(spec: TrialSpec, runtime: TrialRuntime | None = None) -> TrialRecord: ...


@overload
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
) -> TrialRecord: ...


def run_trial(*args: Any, **kwargs: Any) -> TrialRecord:
    """One trial, start to grade: `run_trial(spec, runtime=None)`, the trial `spec` describes
    (`TrialSpec`), played on this thread as `runtime` says (`TrialRuntime`: by default the plan
    of one trial, default time limits). `Cancelled` when the runtime's `stop` is set while an agent
    is at work (the trial is then dropped).

    The form of castbench 0.1.0, `run_trial(domain, task, trial_index, seed, agents, expected,
    limits, verification, traits, time_limits, stop, grading, perturbations, plan, *, labelled,
    overrule, reply_judge)`, still runs the same trial, with a `DeprecationWarning`: it goes away
    in castbench 0.2.0."""
    if (args and isinstance(args[0], TrialSpec)) or "spec" in kwargs:
        spec, runtime = _new_form(*args, **kwargs)
    else:
        warnings.warn(
            "run_trial(domain, task, trial_index, seed, agents, expected, ...) is deprecated and will "
            f"be removed in castbench {REMOVAL}: call run_trial(TrialSpec(domain, task, trial_index, "
            "seed, agents, expected, ...), TrialRuntime(...)) instead (castbench.domain)",
            CastbenchDeprecationWarning,
            stacklevel=2,
        )
        spec, runtime = trial_of(*args, **kwargs)
    return play(spec, runtime)


def _new_form(spec: TrialSpec, runtime: TrialRuntime | None = None) -> tuple[TrialSpec, TrialRuntime]:
    if not isinstance(spec, TrialSpec):
        raise TypeError(f"run_trial's spec must be a TrialSpec, not {type(spec).__name__}")
    return spec, runtime or DEFAULT_RUNTIME


def trial_of(
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
) -> tuple[TrialSpec, TrialRuntime]:
    """The spec and runtime that `run_trial`'s 0.1.0 arguments describe."""
    spec = TrialSpec(
        domain,
        task,
        trial_index,
        seed,
        agents,
        expected,
        limits or Limits(),
        verification or Verification(),
        traits,
        grading,
        perturbations,
        labelled,
        reply_judge,
    )
    runtime = TrialRuntime(plan=plan, time_limits=time_limits or TimeLimits(), stop=stop, overrule=overrule)
    return spec, runtime


def play(spec: TrialSpec, runtime: TrialRuntime = DEFAULT_RUNTIME) -> TrialRecord:
    """`run_trial` of a spec: the episode stepped with the policy's actions (or driven by the
    policy's transport, for an agent that calls in), closed, and its record graded."""
    policy = spec.agents.policy
    if policy is None:
        raise ValueError("run_trial needs a policy: drive an Episode to bring actions from outside")
    plan = runtime.plan or plan_execution(spec.agents)
    if runtime.plan is None:
        runtime = replace(runtime, plan=plan)
    transport = connect(policy, plan.call("policy"))
    if transport.drives:  # the agent holds the policy: the episode gets its actions from outside
        spec = replace(spec, agents=replace(spec.agents, policy=None))
    episode = Episode(spec, runtime)
    try:
        if transport.drives:
            cast(DrivingTransport, transport).drive(episode)
        else:
            episode.play()
    finally:
        episode.close()
    return episode.record()
