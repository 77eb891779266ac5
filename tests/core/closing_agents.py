"""Agents that end the conversation themselves, loaded by import path as a team's are
(`--policy tests.core.closing_agents:ClosingOracle`). Run from the repository root."""

from __future__ import annotations

from castbench._agents.scripted.oracle import OraclePolicy
from castbench._agents.views import PolicyView
from castbench._base.conversation import AGENT_STOP, Action, ReplyAction
from castbench._base.dialogue import ANYTHING_ELSE

__all__ = ["ClosingOracle", "MarkerOracle"]


class ClosingOracle(OraclePolicy):
    """The oracle, closing with "Goodbye." and an explicit end instead of asking for anything else."""

    def propose(self, view: PolicyView) -> Action:
        action = super().propose(view)
        if isinstance(action, ReplyAction) and ANYTHING_ELSE in action.text:
            return ReplyAction(text=action.text.replace(ANYTHING_ELSE, "Goodbye."), end=True)
        return action


class MarkerOracle(OraclePolicy):
    """The oracle, closing with "Have a great day!" and the stop marker (an agent that speaks text only)."""

    def propose(self, view: PolicyView) -> Action:
        action = super().propose(view)
        if isinstance(action, ReplyAction) and ANYTHING_ELSE in action.text:
            return ReplyAction(text=action.text.replace(ANYTHING_ELSE, f"Have a great day! {AGENT_STOP}"))
        return action
