"""The two-step policy `bench/fresh_process.py` runs: one look-up, then the closing question.
Small work, the same in castbench's process (`--in-process`) and in a fresh process per trial."""

from __future__ import annotations

from castbench.agents import Action, Briefing, PolicyView, ReplyAction, ToolCallAction

CLOSING = "Is there anything else I can help you with?"


class TwoStepPolicy:
    def __init__(self, briefing: Briefing) -> None:
        self.briefing = briefing

    def propose(self, view: PolicyView) -> Action:
        if len(view.conversation) == 1:
            return ToolCallAction(name="get_order_details", arguments={"order_id": "#W0000000"})
        return ReplyAction(text=CLOSING)
