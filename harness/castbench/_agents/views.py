"""The only place where privilege is decided: what each role may see.

| role            | sees                                                                  |
|-----------------|-----------------------------------------------------------------------|
| policy          | policy document, tool schemas, the visible conversation, critiques    |
| deployed critic | the policy's view + the proposed action                               |
| simulated user  | its scenario + the agent's replies (never tool results)               |
| oracle agents   | all of the above + the task (ground truth) — marked privileged        |

Everything else in castbench receives one of these views, never a `Task`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from castbench._base.conversation import Action, CritiqueTurn, Event, UserToolCall
from castbench._domain.database import Database
from castbench._domain.domain import Domain
from castbench._domain.task import Task, ToolCall, UserScenario
from castbench._domain.tools import Observation

__all__ = [
    "Briefing",
    "CriticView",
    "PolicyView",
    "PrivilegedBriefing",
    "UserBriefing",
    "briefing_for",
    "public_briefing",
    "user_briefing_for",
]


@dataclass(frozen=True, slots=True)
class Briefing:
    """What an agent may know when a trial starts: the domain's public face and its seed."""

    domain: str
    policy: str
    tools: tuple[dict[str, Any], ...]
    write_tools: frozenset[str]
    seed: int
    trial_index: int
    verbatim_policy: bool = field(default=False, kw_only=True)
    """The domain's policy is the whole system prompt of a model policy using native function
    calling, as the benchmark it comes from shows it (τ's wiki): castbench adds nothing."""


@dataclass(frozen=True, slots=True)
class PrivilegedBriefing(Briefing):
    """A briefing that carries the task itself, and a window on the trial's true state: only for
    agents marked `privileged` (oracle and simulated critics, upper bounds)."""

    task: Task
    state: Callable[[], Database] | None = None


@dataclass(frozen=True, slots=True)
class UserBriefing:
    domain: str
    scenario: UserScenario
    seed: int
    user_tools: tuple[dict[str, Any], ...] = ()
    perform: Callable[[ToolCall], Observation] | None = None
    """Runs a user-side tool on this trial's own state (the user's phone, say)."""
    traits: dict[str, str] | None = None
    """Trait profile (e.g. {"impatience": "high"}) the simulator should act out."""


@dataclass(frozen=True, slots=True)
class PolicyView:
    """The visible conversation so far; during a revision it ends with the rejected proposal
    and the critique of it."""

    briefing: Briefing
    conversation: tuple[Event, ...]

    @property
    def critique(self) -> CritiqueTurn | None:
        last = self.conversation[-1] if self.conversation else None
        return last if isinstance(last, CritiqueTurn) else None


@dataclass(frozen=True, slots=True)
class CriticView:
    briefing: Briefing
    conversation: tuple[Event, ...]
    proposal: Action


def briefing_for(
    domain: Domain,
    task: Task,
    seed: int,
    trial_index: int,
    privileged: bool,
    state: Callable[[], Database] | None = None,
) -> Briefing:
    if privileged:
        public = public_briefing(domain, seed, trial_index)
        known = {item.name: getattr(public, item.name) for item in fields(Briefing)}
        return PrivilegedBriefing(**known, task=task, state=state)
    return public_briefing(domain, seed, trial_index)


def public_briefing(domain: Domain, seed: int, trial_index: int) -> Briefing:
    """The briefing of a policy or deployed critic: built from the domain alone, so no task can
    reach it (training data for them is built with it too)."""
    return Briefing(
        domain.name,
        domain.policy,
        tuple(domain.toolkit.schemas),
        frozenset(tool.name for tool in domain.toolkit if tool.writes),
        seed,
        trial_index,
        verbatim_policy=domain.verbatim_policy,
    )


def user_briefing_for(
    domain: Domain,
    task: Task,
    seed: int,
    db: Database,
    traits: dict[str, str] | None = None,
    performed: list[UserToolCall] | None = None,
) -> UserBriefing:
    """`performed`, when given, receives every user-side call the user makes (the episode puts
    them on the user's turn, so a grader can replay them)."""
    toolkit = domain.toolkit_for("user")

    def perform(call: ToolCall) -> Observation:
        observation = toolkit.call(db, call.name, call.arguments)
        if performed is not None:
            performed.append(
                UserToolCall(
                    name=call.name,
                    arguments=dict(call.arguments),
                    content=observation.content,
                    error=observation.error,
                )
            )
        return observation

    return UserBriefing(
        domain=domain.name,
        scenario=task.scenario,
        seed=seed,
        user_tools=tuple(toolkit.schemas),
        perform=perform if len(toolkit) else None,
        traits=traits or None,
    )
