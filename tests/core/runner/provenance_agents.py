"""Import-path agents for the provenance tests (`--policy tests.core.runner.provenance_agents:...`)."""

from __future__ import annotations

from typing import ClassVar

from castbench._agents.views import Briefing, PolicyView
from castbench._base.conversation import Action, ReplyAction

__all__ = ["DeclaredPrivilegedPolicy"]


class DeclaredPrivilegedPolicy:
    """Declares itself privileged (so castbench hands it the ground truth, in its own process);
    it closes the conversation at once. Its runs are upper bounds, and must say so."""

    privileged: ClassVar[bool] = True

    def __init__(self, briefing: Briefing) -> None:
        self.briefing = briefing

    def propose(self, view: PolicyView) -> Action:
        return ReplyAction(text="Is there anything else I can help you with?")
