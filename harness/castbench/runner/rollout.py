"""The engine's driver of a trial: an `Episode` (see `castbench.runner.episode`) stepped with the
actions of the policy it holds, until the user stops, a tool ends the conversation, or a limit
is hit; then graded.

    user opens
    loop until the trial is over:
        the policy proposes an action                     (it sees a PolicyView)
        the episode steps it: the critic verifies it, up to `rounds` times (a rejection gives
        the policy a revision view), then the action executes
    grade the final state against the expected state

An agent service (`--policy http://...`) holds its policy itself: its trial is driven by
`castbench.service.agent_http`, which steps the same `Episode` with the tool calls arriving over
MCP and the replies over HTTP. Every other driver (the MCP server, the trainers' `Environment`)
steps it too, so there is one rollout path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from importlib.metadata import entry_points

from castbench.agents.registry import AgentSpec
from castbench.domain import Database, Domain, Task
from castbench.grading import GradingMode
from castbench.records.perturbations import Perturbations
from castbench.records.trial import TrialRecord
from castbench.runner.deadline import Halt, TimeLimits
from castbench.runner.episode import AgentSet, Episode, Limits, Verification

__all__ = ["AgentSet", "Limits", "TimeLimits", "Verification", "run_trial"]


def episode_driver(kind: str) -> Callable[[Episode, AgentSpec], None]:
    """The driver of a policy that is not called but calls in (an agent service): it steps the
    episode with the actions that arrive. Transports register theirs under the entry-point group
    `castbench.drivers` (the agent service's lives in `castbench.service`), so the runner depends
    on no transport's code."""
    found = entry_points(group="castbench.drivers", name=kind)
    if not found:
        raise RuntimeError(
            f"no episode driver for '{kind}' agents is installed (entry points castbench.drivers)"
        )
    driver: Callable[[Episode, AgentSpec], None] = next(iter(found)).load()
    return driver


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
) -> TrialRecord:
    """One trial, start to grade. `Cancelled` when `stop` is set while an agent is at work (the
    trial is then dropped)."""
    policy = agents.policy
    if policy is None:
        raise ValueError("run_trial needs a policy: drive an Episode to bring actions from outside")
    service = policy.kind == "service"
    if service:  # the service holds the policy: the episode gets its actions from outside
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
    )
    try:
        if service:
            episode_driver(policy.kind)(episode, policy)
        else:
            episode.reset()
            while not episode.done:
                episode.act()
    finally:
        episode.close()
    return episode.record()
