"""The small protocols a team implements to plug its own agent, critic or user into castbench.

A factory is any callable `factory(briefing, **params) -> instance`, typically the class itself;
it is called once per trial, so an instance may keep per-trial state. An agent given by import
path runs in a worker process of its own (see `castbench._agents.transports`): it receives its
briefing and views as copies and must not count on sharing anything else with castbench. A class
attribute `privileged = True` asks for a `PrivilegedBriefing` (the task): such agents run in
castbench's process and are marked in results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from castbench._agents.views import CriticView, PolicyView
from castbench._base import lossless
from castbench._base.conversation import Action, Verdict

__all__ = ["PROTOCOL_METHODS", "Critic", "Policy", "UserReply", "UserSimulator", "output_problem"]


@runtime_checkable
class Policy(Protocol):
    def propose(self, view: PolicyView) -> Action:
        """The next action: a tool call, a reply to the user, or (for a model) a malformed one.
        A reply may carry `confidence` (0..1, the chance the trial succeeds): an agent that
        reports it gets a calibration score in `castbench profile`."""


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


MAX_OUTPUT_CHARS = 1_000_000
"""The most JSON text one output of an agent (an action, a verdict, a reply) may take: far above
any real tool call or message, far below what makes a store and `runs show` unusable."""


def _storable(value: Any) -> str | None:
    """Why `value` (an action, verdict or text) cannot be stored and read back as it is, or None
    when it can (`castbench._base.lossless`: lone surrogates, NUL, NaN, big integers can; an object
    that is no JSON, bytes or an integer of thousands of digits cannot; nor can anything over
    `MAX_OUTPUT_CHARS`)."""
    if isinstance(value, BaseModel):
        return lossless.problem(value, MAX_OUTPUT_CHARS)
    if isinstance(value, str) and len(value) > MAX_OUTPUT_CHARS:
        return f"{len(value) / 1e6:.1f} MB of text, over the {MAX_OUTPUT_CHARS / 1e6:g} MB cap on one output"
    return None


def output_problem(role: str, value: Any, expected: type | tuple[type, ...], what: str) -> str | None:
    """Why what an agent returned cannot be used (the wrong type, or not storable), or None.
    Checked where the agent runs: in the trial loop, and in a worker before it answers."""
    if not isinstance(value, expected):
        kinds = expected if isinstance(expected, tuple) else (expected,)
        names = " or ".join(kind.__name__ for kind in kinds)
        return f"{role} returned {type(value).__name__} from {what}, not {names}"
    problem = _storable(value)
    if problem is not None:
        return f"{role} returned a {what} that cannot be stored ({problem}): {value!r:.300}"
    return None
