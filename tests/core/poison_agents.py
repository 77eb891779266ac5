"""Agents whose output is hard to store, by import path
(`--policy tests.core.poison_agents:PoisonPolicy?mode=surrogate`). Each makes one tool call whose
arguments (or raw argument text, which the tool parses and echoes back) hold the awkward value,
says it to the user, and then closes the conversation: a trial every store must keep as it was,
scored."""

from __future__ import annotations

import random
from typing import Any

from castbench._agents.views import Briefing, PolicyView
from castbench._base.conversation import Action, ReplyAction, ToolCallAction
from castbench._base.dialogue import ANYTHING_ELSE

__all__ = ["POISONS", "FuzzPolicy", "PoisonPolicy"]

_HUGE = 10**5000
POISONS: dict[str, Any] = {
    "surrogate": "#W\ud800",
    "low_surrogate_pair_reversed": "\udc00\ud800",
    "nul": "#W\x00123",
    "non_bmp": "#W\U0001f600",
    "replacement": "\ufffd",
    "nan": float("nan"),
    "infinity": float("-inf"),
    "big_int": 2**80,
    "tiny_float": 5e-324,
    "surrogate_key": {"\ud800": "\udfff", "ok": ["\x00", None, True]},
}
"""Values a model or a team's code can put in tool arguments; each stored and read back as it was."""

RAW: dict[str, str] = {
    "escaped_surrogate": '{"order_id": "#W\\ud800"}',
    "escaped_nul": '{"order_id": "#W\\u0000"}',
    "escaped_surrogate_key": '{"\\ud800": "x"}',
    "huge_int_text": '{"order_id": ' + "9" * 5000 + "}",
    "nan_text": '{"order_id": NaN}',
}
"""Raw argument text (a model's arguments that the tool parses, then echoes what it read)."""


class PoisonPolicy:
    """`mode`: a key of `POISONS` (the value as `order_id`), of `RAW` (the raw argument text), or
    `huge_int` (an integer of 5000 digits, which nothing can store: the agent's failure)."""

    def __init__(self, briefing: Briefing, mode: str) -> None:
        self.mode = mode
        self.turn = 0

    def propose(self, view: PolicyView) -> Action:
        self.turn += 1
        if self.turn == 1:
            if self.mode in RAW:
                return ToolCallAction(name="get_order_details", arguments=RAW[self.mode])
            value = _HUGE if self.mode == "huge_int" else POISONS[self.mode]
            return ToolCallAction(name="get_order_details", arguments={"order_id": value})
        if self.turn == 2:
            return ReplyAction(text=f"I looked up {POISONS.get(self.mode, self.mode)!s}.")
        return ReplyAction(text=ANYTHING_ELSE)


class FuzzPolicy:
    """Seeded by its trial: `steps` actions, each a random tool with awkward values for every
    argument (a fifth of them raw argument text with a 4400-digit integer), or a reply with one,
    then it closes the conversation."""

    def __init__(self, briefing: Briefing, steps: int = 12) -> None:
        self.rng = random.Random(briefing.seed)
        self.tools = [tool["function"] for tool in briefing.tools]
        self.left = steps
        self.values = [*POISONS.values(), "", "a" * 3000, -1, True, None, [], ["\ud800"], "9" * 400]

    def propose(self, view: PolicyView) -> Action:
        self.left -= 1
        if self.left < 0:
            return ReplyAction(text=ANYTHING_ELSE)
        if self.rng.random() < 0.2:
            return ReplyAction(text=f"{self.rng.choice(self.values)!s}: shall I go ahead? yes")
        tool = self.rng.choice(self.tools)
        if self.rng.random() < 0.2:
            return ToolCallAction(name=tool["name"], arguments='{"x": "\\ud800", "n": ' + "9" * 4400 + "}")
        names = tool["parameters"].get("properties", {})
        return ToolCallAction(
            name=tool["name"], arguments={name: self.rng.choice(self.values) for name in names}
        )
