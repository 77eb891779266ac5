"""Policies that cannot work at all, loaded by import path as a team's are: every trial of theirs
ends `agent_error` for one reason (run from the repository root)."""

from __future__ import annotations

from castbench._agents.views import Briefing, PolicyView
from castbench._base.conversation import Action, ReplyAction

__all__ = ["NoBriefingPolicy", "NoViewPolicy", "StrictPolicy"]


class NoBriefingPolicy:
    """Its constructor takes no briefing."""

    def __init__(self) -> None:
        pass

    def propose(self, view: PolicyView) -> Action:
        return ReplyAction(text="Hello")


class NoViewPolicy:
    """Its `propose` takes no view."""

    def __init__(self, briefing: Briefing) -> None:
        pass

    def propose(self) -> Action:  # type: ignore[empty-body]
        return ReplyAction(text="Hello")


class StrictPolicy:
    """Refuses a parameter it is given: `?tone=rude` raises in every trial."""

    def __init__(self, briefing: Briefing, tone: str = "polite") -> None:
        if tone not in ("polite", "formal"):
            raise ValueError(f"tone must be polite or formal, not {tone!r}")

    def propose(self, view: PolicyView) -> Action:
        return ReplyAction(text="Hello")
