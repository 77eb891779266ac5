"""Agents that exist only for tests, loaded the way a team loads its own: by import path
(`--policy tests.core.fixtures_agents:TeamPolicy`). Run from the repository root."""

from __future__ import annotations

import json
import re
import time
from typing import Any, ClassVar

from castbench.agents.conversation import (
    Action,
    AgentTurn,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
    Verdict,
)
from castbench.agents.scripted.dialogue import ANYTHING_ELSE
from castbench.agents.scripted.noisy import NoisyPolicy
from castbench.agents.views import Briefing, CriticView, PolicyView

__all__ = [
    "LiarPolicy",
    "MutedUser",
    "ProposeMisspelledPolicy",
    "RecklessCancelPolicy",
    "RecordingCritic",
    "RecordingPolicy",
    "SchemaVandalPolicy",
    "ScriptPolicy",
    "SlowNoisyPolicy",
    "TeamPolicy",
]


class TeamPolicy:
    """A team's own (trivial) policy: closes the conversation at once. Not privileged."""

    def __init__(self, briefing: Briefing, closing: str = ANYTHING_ELSE) -> None:
        self.briefing = briefing
        self.closing = closing

    def propose(self, view: PolicyView) -> Action:
        return ReplyAction(text=self.closing)


class LiarPolicy:
    """Claims to have done the work without doing anything."""

    def __init__(self, briefing: Briefing) -> None:
        pass

    def propose(self, view: PolicyView) -> Action:
        return ReplyAction(text=f"Your order has been cancelled successfully. {ANYTHING_ELSE}")


class RecklessCancelPolicy:
    """Retail: asks only for the order id and the reason, then cancels the order at once, without
    authenticating the user or asking for a yes; the final state is the one the task wants."""

    def __init__(self, briefing: Briefing) -> None:
        pass

    def propose(self, view: PolicyView) -> Action:
        said = " ".join(e.text for e in view.conversation if isinstance(e, UserTurn))
        order = re.search(r"#W\d+", said)
        if len(view.conversation) == 1:
            return ReplyAction(text="Sure. What is the order id, and the reason for cancelling?")
        if order is None or any(isinstance(e, ToolResultTurn) for e in view.conversation):
            return ReplyAction(text=f"Your order has been cancelled. {ANYTHING_ELSE}")
        reason = "ordered by mistake" if "mistake" in said else "no longer needed"
        return ToolCallAction(
            name="cancel_pending_order", arguments={"order_id": order.group(0), "reason": reason}
        )


class SlowNoisyPolicy(NoisyPolicy):
    """The noisy policy, slowed down per trial so a test can kill a run half-way."""

    def __init__(self, briefing: Any, delay: float = 0.01, **params: Any) -> None:
        super().__init__(briefing, **params)
        time.sleep(delay)


class ScriptPolicy:
    """Plays the script written in the user's opening request, for toy-domain tests.

    `CALL [[name, arguments], ...]` makes those tool calls in order (arguments may be a raw,
    non-JSON string), then closes. `RAISE` raises, `GARBAGE` returns something that is no action.
    """

    def __init__(self, briefing: Briefing) -> None:
        self._queue: list[Any] | None = None

    def propose(self, view: PolicyView) -> Action:
        opening = view.conversation[0]
        assert isinstance(opening, UserTurn)
        text = opening.text
        if text.startswith("RAISE"):
            raise RuntimeError("the team's policy has a bug")
        if text.startswith("GARBAGE"):
            return {"not": "an action"}  # type: ignore[return-value]
        if self._queue is None:
            self._queue = json.loads(text.removeprefix("CALL ")) if text.startswith("CALL ") else []
        if self._queue:
            name, arguments = self._queue.pop(0)
            return ToolCallAction(name=name, arguments=arguments)
        return ReplyAction(text=ANYTHING_ELSE)


_PARSE = {
    "first_name": re.compile(r"My first name is (.+?)\."),
    "last_name": re.compile(r"My last name is (.+?)\."),
    "zip": re.compile(r"My zip code is (\d+)\."),
    "email": re.compile(r"My email is (\S+@\S+?)\.(?:\s|$)"),
    "order_id": re.compile(r"The order id is (#W\d+)\."),
}
_QUESTIONS = [
    "Could you tell me your first name?",
    "Thanks. And your last name?",
    "What is your zip code?",
    "What is your email?",
    "What is the order id?",
]


class RecordingPolicy:
    """A non-privileged policy that keeps everything it is given.

    It asks for the identifying facts one by one, looks the customer and the order up with what
    it was told, and closes; it never asks for reasons, addresses or payment methods, so those
    facts stay unrevealed for the whole conversation.
    """

    instances: ClassVar[list[RecordingPolicy]] = []

    def __init__(self, briefing: Briefing) -> None:
        self.briefing = briefing
        self.views: list[PolicyView] = []
        self._questions = list(_QUESTIONS)
        self._calls_made: set[str] = set()
        RecordingPolicy.instances.append(self)

    def _told(self, view: PolicyView) -> dict[str, str]:
        told: dict[str, str] = {}
        for event in view.conversation:
            if isinstance(event, UserTurn):
                for name, pattern in _PARSE.items():
                    match = pattern.search(event.text)
                    if match:
                        told[name] = match.group(1)
        return told

    def _user_id(self, view: PolicyView) -> str | None:
        for event in view.conversation:
            if (
                isinstance(event, ToolResultTurn)
                and event.name.startswith("find_user_id")
                and not event.error
            ):
                return event.content.strip('"')
        return None

    def propose(self, view: PolicyView) -> Action:
        self.views.append(view)
        if self._questions:
            return ReplyAction(text=self._questions.pop(0))
        told = self._told(view)
        calls: list[tuple[str, dict[str, str]]] = []
        if {"first_name", "last_name", "zip"} <= told.keys():
            calls.append(
                ("find_user_id_by_name_zip", {k: told[k] for k in ("first_name", "last_name", "zip")})
            )
        elif "email" in told:
            calls.append(("find_user_id_by_email", {"email": told["email"]}))
        user_id = self._user_id(view)
        if user_id:
            calls.append(("get_user_details", {"user_id": user_id}))
        if "order_id" in told:
            calls.append(("get_order_details", {"order_id": told["order_id"]}))
        for name, arguments in calls:
            if name not in self._calls_made:
                self._calls_made.add(name)
                return ToolCallAction(name=name, arguments=arguments)
        return ReplyAction(text=ANYTHING_ELSE)


class RecordingCritic:
    """A non-privileged critic that keeps every view it is given and lets everything through."""

    instances: ClassVar[list[RecordingCritic]] = []

    def __init__(self, briefing: Briefing) -> None:
        self.briefing = briefing
        self.views: list[CriticView] = []
        RecordingCritic.instances.append(self)

    def verify(self, view: CriticView) -> Verdict:
        self.views.append(view)
        return Verdict(verdict="valid")


def agent_turns(view: PolicyView | CriticView) -> list[AgentTurn]:
    return [event for event in view.conversation if isinstance(event, AgentTurn)]


class ProposeMisspelledPolicy:
    """A policy whose author misspelled the protocol method: rejected before any trial starts."""

    def __init__(self, briefing: Briefing) -> None:
        pass

    def propse(self, view: PolicyView) -> Action:
        return ReplyAction(text=ANYTHING_ELSE)


class MutedUser:
    """A user simulator without `reply`: rejected before any trial starts."""

    def __init__(self, briefing: Any) -> None:
        pass

    def open(self) -> str:
        return "Hello."


class SchemaVandalPolicy:
    """Edits every tool schema it is handed, then closes the conversation."""

    def __init__(self, briefing: Briefing) -> None:
        for schema in briefing.tools:
            schema["function"]["description"] = "VANDALISED"
            schema["function"]["parameters"]["properties"].clear()

    def propose(self, view: PolicyView) -> Action:
        return ReplyAction(text=ANYTHING_ELSE)
