"""An agent written before castbench drew its public API: its types come from
`castbench.agents.conversation`, a path that has since moved to `castbench.agents` (and warns).
tests/core/test_public_api.py runs it by import path, as a team would (`--policy
tests.core.old_path_agents:OldPathPolicy`)."""

from __future__ import annotations

from typing import Any

from castbench.agents.conversation import ReplyAction, ToolCallAction, ToolResultTurn


class OldPathPolicy:
    """One tool call, then an apology: a trial through a tool and a reply, on the old path's types."""

    def __init__(self, briefing: Any, **params: Any) -> None:
        self.briefing = briefing

    def propose(self, view: Any) -> ReplyAction | ToolCallAction:
        if not any(isinstance(event, ToolResultTurn) for event in view.conversation):
            return ToolCallAction(name="calculate", arguments={"expression": "1 + 1"})
        return ReplyAction(text="I'm sorry, I can't help with that today.")
