"""Agents that exist only for tests, loaded the way a team loads its own: by import path
(`--policy tests.core.fixtures_agents:TeamPolicy`). Run from the repository root."""

from __future__ import annotations

import json
import re
import time
from typing import Any, ClassVar

from castbench._agents.protocols import UserReply
from castbench._agents.scripted.noisy import NoisyPolicy
from castbench._agents.scripted.user import ScriptedUser
from castbench._agents.views import Briefing, CriticView, PolicyView, UserBriefing
from castbench._base.conversation import (
    Action,
    AgentTurn,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
    Verdict,
)
from castbench._base.dialogue import ANYTHING_ELSE

__all__ = [
    "LiarPolicy",
    "MutedUser",
    "ProposeMisspelledPolicy",
    "RecklessCancelPolicy",
    "RecordingCritic",
    "RecordingPolicy",
    "RecordingUser",
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
    """The noisy policy, slowed down per trial so a test can kill a run half-way; with `started`,
    each trial (attempt) it starts appends its seed to that file, so a test sees restarts."""

    def __init__(self, briefing: Any, delay: float = 0.01, started: str = "", **params: Any) -> None:
        super().__init__(briefing, **params)
        if started:
            with open(started, "a") as log:
                log.write(f"{briefing.seed}\n")
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


_STATEMENT = re.compile(r"\b(?:My|The) ([a-z][a-z ]*?) (?:is|are) (\S.*?)\.(?:\s|$)")
"""How the scripted user states a fact: "My zip code is 12345.", "The order id is #W1."."""
_DEVICE_STEP = "Please open the status screen on your phone and tell me what it shows."
"""Telecom's users act on their phones when told to; other domains' users just say okay."""


def _questions(tools: tuple[dict[str, Any], ...]) -> list[str]:
    """One question per identifying argument the domain's public tools take (names, ids, contact
    details): what any agent could ask knowing only the tool schemas."""
    names = {name for tool in tools for name in tool["function"]["parameters"]["properties"]}
    identifying = sorted(
        name
        for name in names
        if name.endswith(("_id", "_name", "zip", "email", "phone_number", "date_of_birth"))
        and not name.startswith(("payment", "new_", "item"))
    )
    return [f"Could you tell me your {name.replace('_', ' ')}?" for name in identifying]


class RecordingPolicy:
    """A non-privileged policy for any domain that keeps everything it is given.

    It asks for identifying facts one by one (the arguments its tools take), looks things up as
    soon as it was told enough, asks a telecom user to read their phone's status screen, and closes;
    it never asks for reasons, addresses or payment methods, so those facts stay unrevealed.
    """

    instances: ClassVar[list[RecordingPolicy]] = []

    def __init__(self, briefing: Briefing) -> None:
        self.briefing = briefing
        self.views: list[PolicyView] = []
        self.replies: list[str] = []
        self._questions = [*_questions(briefing.tools), _DEVICE_STEP]
        self._calls_made: set[str] = set()
        RecordingPolicy.instances.append(self)

    @staticmethod
    def _told(view: PolicyView) -> dict[str, str]:
        """What the user said (by argument name) and ids that look-ups returned."""
        told: dict[str, str] = {}
        for event in view.conversation:
            if isinstance(event, UserTurn):
                for subject, value in _STATEMENT.findall(event.text):
                    told[subject.replace(" ", "_")] = value
            elif isinstance(event, ToolResultTurn) and event.name.startswith("find_") and not event.error:
                try:  # an id alone comes as plain text (find_user_id_by_name_zip), JSON elsewhere
                    found = json.loads(event.content)
                except ValueError:
                    found = event.content
                if isinstance(found, str):  # find_user_id_by_email, find_patient_by_email -> *_id
                    subject = event.name.removeprefix("find_").split("_by_")[0]
                    told[subject if subject.endswith("_id") else subject + "_id"] = found
        return told

    @staticmethod
    def _value(told: dict[str, str], argument: str) -> str | None:
        for subject, value in told.items():
            if subject == argument or subject.startswith(argument + "_"):  # zip <- zip_code
                return value
        return None

    def propose(self, view: PolicyView) -> Action:
        self.views.append(view)
        action = self._next(view)
        if isinstance(action, ReplyAction):
            self.replies.append(action.text)
        return action

    def _next(self, view: PolicyView) -> Action:
        """A look-up as soon as what it needs was told, else the next question, else goodbye."""
        told = self._told(view)
        for tool in self.briefing.tools:
            name, parameters = tool["function"]["name"], tool["function"]["parameters"]
            arguments = {argument: self._value(told, argument) for argument in parameters.get("required", [])}
            if name in self._calls_made or name in self.briefing.write_tools or None in arguments.values():
                continue
            self._calls_made.add(name)
            return ToolCallAction(name=name, arguments=arguments)
        if self._questions:
            return ReplyAction(text=self._questions.pop(0))
        return ReplyAction(text=ANYTHING_ELSE)


class RecordingUser(ScriptedUser):
    """The scripted user, keeping its briefing and every message it is sent."""

    instances: ClassVar[list[RecordingUser]] = []

    def __init__(self, briefing: UserBriefing) -> None:
        super().__init__(briefing)
        self.briefing = briefing
        self.messages: list[str] = []
        RecordingUser.instances.append(self)

    def reply(self, message: str) -> UserReply:
        self.messages.append(message)
        return super().reply(message)


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
