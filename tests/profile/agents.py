"""Agents written for the profile's tests: the oracle, and the oracle that retries a tool call the
harness failed transiently (the same call again, at most eight times a trial), and one that reports a fixed
confidence on every reply. They differ from the oracle only where the test looks."""

from __future__ import annotations

from castbench._agents.scripted.oracle import OraclePolicy
from castbench._agents.views import PolicyView
from castbench._base.conversation import Action, AgentTurn, ReplyAction, ToolCallAction, ToolResultTurn

_TRANSIENT = ("transient", "timed out", "rate limit", "<<truncated")


class RetryingOracle(OraclePolicy):
    """Retries a call whose result was an error it recognises as transient, or empty or malformed."""

    def __init__(self, briefing: object, retries: int = 8) -> None:
        super().__init__(briefing)  # type: ignore[arg-type]
        self._retries = retries

    def propose(self, view: PolicyView) -> Action:
        events = view.conversation
        if len(events) >= 2 and self._retries > 0:
            call, result = events[-2], events[-1]
            if (
                isinstance(result, ToolResultTurn)
                and isinstance(call, AgentTurn)
                and isinstance(call.action, ToolCallAction)
                and (result.content == "" or any(mark in result.content for mark in _TRANSIENT))
            ):
                self._retries -= 1
                return call.action
        return super().propose(view)


class ConfidentOracle(OraclePolicy):
    """The oracle, saying it is 90% sure on every reply."""

    def propose(self, view: PolicyView) -> Action:
        action = super().propose(view)
        if isinstance(action, ReplyAction):
            return action.model_copy(update={"confidence": 0.9})
        return action
