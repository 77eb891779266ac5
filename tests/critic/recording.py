"""Test-only critics and policies for the critic tests, loaded by import path the way a team
loads its own (`--critic tests.critic.recording:RecordingCritic`). Run from the repository root.

Instances register themselves in a class-level list so a test can inspect what each one was
given; tests clear the lists first (trials run one at a time unless a test asks otherwise).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from castbench._agents.scripted.oracle import OraclePolicy
from castbench._agents.views import Briefing, CriticView, PolicyView
from castbench._base.conversation import (
    Action,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
    Verdict,
)
from castbench._base.dialogue import ANYTHING_ELSE

__all__ = [
    "ApproveAllCritic",
    "AskingPolicy",
    "RaisingCritic",
    "RecordingCritic",
    "RecordingOraclePolicy",
    "RejectAllCritic",
]


class RecordingCritic:
    """A non-privileged critic that keeps its briefing and every view; it rejects the first
    proposal of every write so that revisions happen too, and passes everything else."""

    instances: ClassVar[list[RecordingCritic]] = []

    def __init__(self, briefing: Briefing) -> None:
        self.briefing = briefing
        self.views: list[CriticView] = []
        RecordingCritic.instances.append(self)

    def verify(self, view: CriticView) -> Verdict:
        self.views.append(view)
        proposal = view.proposal
        if isinstance(proposal, ToolCallAction) and proposal.name in view.briefing.write_tools:
            already = sum(
                1
                for seen in self.views
                if seen.proposal == proposal and seen.conversation == view.conversation
            )
            if already == 1:
                return Verdict(
                    verdict="invalid", failure_type="domain_violation", explanation="double-check this"
                )
        return Verdict(verdict="valid")


class ApproveAllCritic:
    """Passes everything: the trial runs as without a critic, with every proposal labelled."""

    def __init__(self, briefing: Briefing) -> None:
        pass

    def verify(self, view: CriticView) -> Verdict:
        return Verdict(verdict="valid")


class RejectAllCritic:
    """Rejects every action it is shown; counts its verdicts."""

    calls: ClassVar[int] = 0

    def __init__(self, briefing: Briefing) -> None:
        self.briefing = briefing

    def verify(self, view: CriticView) -> Verdict:
        RejectAllCritic.calls += 1
        return Verdict(
            verdict="invalid", failure_type="hallucination", explanation="rejected by the test critic"
        )


class RaisingCritic:
    """A critic whose own code has a bug."""

    def __init__(self, briefing: Briefing) -> None:
        pass

    def verify(self, view: CriticView) -> Verdict:
        raise RuntimeError("the team's critic has a bug")


class RecordingOraclePolicy(OraclePolicy):
    """The oracle policy (privileged, stands by its actions under critique) that keeps every view."""

    instances: ClassVar[list[RecordingOraclePolicy]] = []

    def __init__(self, briefing: Any) -> None:
        super().__init__(briefing)
        self.views: list[PolicyView] = []
        RecordingOraclePolicy.instances.append(self)

    def propose(self, view: PolicyView) -> Action:
        self.views.append(view)
        return super().propose(view)


_PARSE = {
    "first_name": re.compile(r"My first name is (.+?)\."),
    "last_name": re.compile(r"My last name is (.+?)\."),
    "zip": re.compile(r"My zip code is (\d+)\."),
    "email": re.compile(r"My email is (\S+@\S+?)\.(?:\s|$)"),
    "order_id": re.compile(r"The order id is (#W\d+)\."),
}


class AskingPolicy:
    """A non-privileged policy: it learns only from the conversation.

    It asks for the identifying facts and the order id, authenticates, looks the order up, then
    asks to cancel it (confirmation) and cancels it with a reason it picks itself if the user
    said yes. It never asks for a reason, an address or a payment method, so those facts stay
    unrevealed for the whole conversation. Under critique it proposes the same action again.
    """

    def __init__(self, briefing: Briefing) -> None:
        self.briefing = briefing
        self._questions = [
            "Could you tell me your first name, last name and zip code?",
            "What is your email?",
            "What is the order id?",
        ]
        self._done: set[str] = set()

    @staticmethod
    def _told(view: PolicyView) -> dict[str, str]:
        told: dict[str, str] = {}
        for event in view.conversation:
            if isinstance(event, UserTurn):
                for name, pattern in _PARSE.items():
                    match = pattern.search(event.text)
                    if match:
                        told[name] = match.group(1)
        return told

    def propose(self, view: PolicyView) -> Action:
        if view.critique is not None:
            return view.critique.proposal
        if self._questions:
            return ReplyAction(text=self._questions.pop(0))
        told = self._told(view)
        if "auth" not in self._done:
            self._done.add("auth")
            if {"first_name", "last_name", "zip"} <= told.keys():
                return ToolCallAction(
                    name="find_user_id_by_name_zip",
                    arguments={k: told[k] for k in ("first_name", "last_name", "zip")},
                )
            if "email" in told:
                return ToolCallAction(name="find_user_id_by_email", arguments={"email": told["email"]})
        order_id = told.get("order_id")
        if order_id and "order" not in self._done:
            self._done.add("order")
            return ToolCallAction(name="get_order_details", arguments={"order_id": order_id})
        if order_id and "confirm" not in self._done:
            self._done.add("confirm")
            return ReplyAction(
                text=f"I can cancel order {order_id}. Do you confirm? Please answer yes or no."
            )
        last_user = next((e.text for e in reversed(view.conversation) if isinstance(e, UserTurn)), "")
        if order_id and "cancel" not in self._done and last_user.lower().startswith("yes"):
            self._done.add("cancel")
            return ToolCallAction(
                name="cancel_pending_order", arguments={"order_id": order_id, "reason": "no longer needed"}
            )
        if any(isinstance(e, ToolResultTurn) and e.name == "cancel_pending_order" for e in view.conversation):
            self._done.add("cancel")
        return ReplyAction(text=ANYTHING_ELSE)
