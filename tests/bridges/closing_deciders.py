"""Public deciders that end the conversation themselves, for agents run outside castbench (the
example A2A agent's `--decider tests.bridges.closing_deciders:ClosingLookupRefuse`, with the
repository root on `PYTHONPATH`). They see only the public briefing and the conversation."""

from __future__ import annotations

from castbench._agents.scripted.refusers import LookupRefusePolicy
from castbench._agents.views import PolicyView
from castbench._base.conversation import Action, ReplyAction
from castbench._base.dialogue import ANYTHING_ELSE

__all__ = ["ClosingLookupRefuse"]


class ClosingLookupRefuse(LookupRefusePolicy):
    """`scripted:lookup-refuse`, closing with "Goodbye." and an explicit end instead of asking
    whether there is anything else: the tasks it solves, it solves and ends itself."""

    def propose(self, view: PolicyView) -> Action:
        action = super().propose(view)
        if isinstance(action, ReplyAction) and ANYTHING_ELSE in action.text:
            return ReplyAction(text=action.text.replace(ANYTHING_ELSE, "Goodbye."), end=True)
        return action
