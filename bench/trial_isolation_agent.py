"""The small policy `bench/trial_isolation.py` times: it imports what an agent written against
castbench's public API imports (already loaded in the worker's template), so a trial's import of
it costs what the import system does, not a library's start-up."""

from __future__ import annotations

from castbench._agents.views import Briefing, PolicyView
from castbench._base.conversation import Action, ReplyAction


class EchoPolicy:
    """Says how long the conversation is: the same small work whatever the process."""

    def __init__(self, briefing: Briefing) -> None:
        self.briefing = briefing

    def propose(self, view: PolicyView) -> Action:
        return ReplyAction(text=f"{len(view.conversation)} events")
