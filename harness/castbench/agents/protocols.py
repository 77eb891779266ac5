"""The small protocols a team implements to plug its own agent, critic or user into castbench.

A factory is any callable `factory(briefing, **params) -> instance`, typically the class itself;
it is called once per trial, so an instance may keep per-trial state. An agent given by import
path runs in a worker process of its own (see `castbench.agents.transports`): it receives its
briefing and views as copies and must not count on sharing anything else with castbench. A class
attribute `privileged = True` asks for a `PrivilegedBriefing` (the task): such agents run in
castbench's process and are marked in results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from castbench.agents.conversation import Action, Verdict
from castbench.agents.views import CriticView, PolicyView

__all__ = ["PROTOCOL_METHODS", "Critic", "Policy", "UserReply", "UserSimulator"]


@runtime_checkable
class Policy(Protocol):
    def propose(self, view: PolicyView) -> Action:
        """The next action: a tool call, a reply to the user, or (for a model) a malformed one."""


@runtime_checkable
class Critic(Protocol):
    def verify(self, view: CriticView) -> Verdict:
        """Judge a proposed action before it executes."""


@dataclass(frozen=True, slots=True)
class UserReply:
    text: str
    stop: bool = False
    """True when the user ends the conversation."""


@runtime_checkable
class UserSimulator(Protocol):
    def open(self) -> str:
        """The opening message."""

    def reply(self, message: str) -> UserReply:
        """Answer the agent's message."""


PROTOCOL_METHODS: dict[str, tuple[str, ...]] = {
    "policy": ("propose",),
    "critic": ("verify",),
    "user": ("open", "reply"),
}
"""The methods each role's protocol above requires: checked when an agent is resolved."""
