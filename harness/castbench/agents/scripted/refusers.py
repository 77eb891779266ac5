"""Reference floors: agents that refuse, so a benchmark shows what refusing alone is worth.

`scripted:refuse` answers every request with an apology and never calls a tool. A do-nothing
agent leaves the state of every refusal and "no change" task right, so without the earned-outcome
check (`castbench.grading.earned`) it would pass all of them; with it, it should score (near) 0.

`scripted:lookup-refuse` does the look-ups first, then refuses: it asks for the user's details
by the names of the read tools' arguments, calls every read tool it can fill from what the user
said and what earlier results showed (values found together in one record, or one id), and then
refuses, citing the status of each record it fetched (anything with an id: an order, a
reservation, a bill). It passes only refusals whose reason is such a status.

Neither is privileged: each sees only its `Briefing` and the visible conversation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any, ClassVar

from castbench.agents.conversation import (
    Action,
    AgentTurn,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench.agents.scripted.dialogue import ANYTHING_ELSE, ask_for
from castbench.agents.views import Briefing, PolicyView

__all__ = ["LookupRefusePolicy", "RefusePolicy"]

REFUSAL = "I'm sorry, I can't help with that request."
_SKIP = frozenset({"calculate", "transfer_to_human_agents"})
"""Read tools that look nothing up."""
_SENTENCE_END = re.compile(r"[.!?](?:\s+|$)")
_STATEMENT = re.compile(r"^(?:my|the) ([a-z ]+?) is (.+)$", re.IGNORECASE)
_BORN = re.compile(r"\bborn on ([A-Z][a-z]+ \d{1,2}, \d{4})")


class RefusePolicy:
    """Apologises and declines every request, with no look-up and no tool call."""

    privileged: ClassVar[bool] = False

    def __init__(self, briefing: Briefing) -> None:
        self._briefing = briefing

    def propose(self, view: PolicyView) -> Action:
        return ReplyAction(text=f"{REFUSAL} {ANYTHING_ELSE}")


def _parameters(schema: dict[str, Any]) -> tuple[str, list[str]]:
    function = schema["function"]
    return function["name"], list(function["parameters"].get("required", []))


class LookupRefusePolicy:
    """Looks up everything it can reach from the user's details, then refuses citing statuses."""

    privileged: ClassVar[bool] = False

    def __init__(self, briefing: Briefing) -> None:
        self._reads = [
            (name, required)
            for name, required in map(_parameters, briefing.tools)
            if name not in briefing.write_tools and name not in _SKIP and required
        ]
        self._asked = False
        self._done: set[str] = set()

    def propose(self, view: PolicyView) -> Action:
        if not self._asked:
            self._asked = True
            names = sorted({param.replace("_", " ") for _, required in self._reads for param in required})
            return ReplyAction(text=ask_for(names))
        for name, arguments in self._candidates(view):
            key = f"{name}({json.dumps(arguments, sort_keys=True)})"
            if key not in self._done:
                self._done.add(key)
                return ToolCallAction(name=name, arguments=arguments)
        return ReplyAction(text=self._refusal(view))

    def _known(self, view: PolicyView) -> dict[str, Any]:
        """What the user stated ("My email is ..."), and each bare id a tool returned (under
        `<word>_id` for each word of the tool's name: `find_user_id_by_email` -> `user_id`)."""
        known: dict[str, Any] = {}
        names = {param for _, required in self._reads for param in required}
        calls = {e.call_id: e.action for e in view.conversation if isinstance(e, AgentTurn) and e.call_id}
        for event in view.conversation:
            if isinstance(event, UserTurn):
                known.update(_stated(event.text, names))
            elif isinstance(event, ToolResultTurn) and not event.error:
                action = calls.get(event.call_id)
                if isinstance(action, ToolCallAction):
                    known.update(_bare_id(event.content, action.name))
        return known

    def _candidates(self, view: PolicyView) -> Iterator[tuple[str, dict[str, Any]]]:
        known = self._known(view)
        for name, required in self._reads:
            if all(param in known for param in required):
                yield name, {param: known[param] for param in required}

    def _refusal(self, view: PolicyView) -> str:
        statuses = []
        for event in view.conversation:
            if not isinstance(event, ToolResultTurn) or event.error:
                continue
            for record in _records(event.content):
                ids = [key for key in record if key.endswith("_id") and isinstance(record[key], str)]
                if ids and isinstance(record.get("status"), str):
                    statuses.append(f"{record[ids[0]]} is {record['status']}")
        cited = f" I checked your records: {'; '.join(dict.fromkeys(statuses))}." if statuses else ""
        return f"{REFUSAL}{cited} {ANYTHING_ELSE}"


def _stated(text: str, names: set[str]) -> dict[str, str]:
    """Values a user stated as "My <name> is <value>." for the argument names it knows."""
    values: dict[str, str] = {}
    for sentence in _SENTENCE_END.split(text):
        statement = _STATEMENT.match(sentence.strip())
        if statement is None:
            continue
        phrase, value = statement.groups()
        words = set(phrase.lower().split())
        for name in names:
            if set(name.split("_")) <= words:
                values[name] = value
    born = _BORN.search(text)
    if born and "date_of_birth" in names:
        values["date_of_birth"] = datetime.strptime(born.group(1), "%B %d, %Y").date().isoformat()
    return values


def _bare_id(content: str, tool: str) -> dict[str, str]:
    token = content.strip()
    if not token or " " in token or token[0] in "[{":
        return {}
    return {f"{word}_id": token for word in tool.split("_") if word not in ("find", "by", "id", "verify")}


def _records(content: str) -> Iterator[dict[str, Any]]:
    """Every JSON object inside a tool result, outermost first."""
    try:
        stack = [json.loads(content)]
    except json.JSONDecodeError:
        return
    while stack:
        value = stack.pop(0)
        if isinstance(value, dict):
            yield value
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
