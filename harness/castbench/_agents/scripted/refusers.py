"""Reference floors: agents that refuse, so a benchmark shows what refusing alone is worth.

`scripted:refuse` answers every request with an apology and never calls a tool. A do-nothing
agent leaves the state of every refusal and "no change" task right, so without the earned-outcome
check (`castbench._grading.earned`) it would pass all of them; with it, it should score (near) 0.

`scripted:lookup-refuse` does the look-ups first, then refuses: it asks for the user's details
by the names of the read tools' arguments, calls every read tool it can fill from what the user
said and what earlier results showed (a bare id, every value under a key named like an argument,
every id listed under its plural: `orders` -> `order_id`), and then refuses, citing the status of
each record it fetched whose id the user gave or a tool returned bare (an order, a reservation,
a bill). It passes only refusals whose reason is such a status, and the tasks whose right answer
is nothing more than the look-ups (τ's read-only tasks, which castbench knows no reason for).

Neither is privileged: each sees only its `Briefing` and the visible conversation.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterator
from datetime import datetime
from functools import lru_cache
from itertools import islice, product
from typing import Any, ClassVar

from castbench._agents.views import Briefing, PolicyView
from castbench._base.conversation import (
    Action,
    AgentTurn,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._base.dialogue import ANYTHING_ELSE, ask_for
from castbench._domain.leaves import listed_argument

__all__ = ["MAX_LOOKUPS", "PER_TOOL", "REFUSAL", "LookupRefusePolicy", "RefusePolicy", "records"]

REFUSAL = "I'm sorry, I can't help with that request."
_SKIP = frozenset({"calculate", "think", "transfer_to_human_agents"})
"""Read tools that look nothing up."""
MAX_LOOKUPS = 30
"""Look-ups per trial: with the questions and replies it stays inside the default step limit."""
PER_TOOL = 8
"""Argument combinations tried per tool."""
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
            if name not in briefing.write_tools and name not in _SKIP
        ]
        self._asked = False
        self._done: set[str] = set()

    def propose(self, view: PolicyView) -> Action:
        if not self._asked:
            self._asked = True
            return ReplyAction(text=self._asking())
        call = self._next_lookup(view)
        return call if call is not None else ReplyAction(text=self._refusal(view))

    def _asking(self) -> str:
        """One question for everything its read tools take (the user's details, their ids)."""
        names = sorted({param.replace("_", " ") for _, required in self._reads for param in required})
        return ask_for(names) if names else "How can I help you today?"

    def _next_lookup(self, view: PolicyView) -> ToolCallAction | None:
        """The next read it has not made yet, while it has look-ups left."""
        if len(self._done) >= MAX_LOOKUPS:
            return None
        for name, arguments in self._candidates(view):
            key = f"{name}({json.dumps(arguments, sort_keys=True)})"
            if key not in self._done:
                self._done.add(key)
                return ToolCallAction(name=name, arguments=arguments)
        return None

    def _named(self, view: PolicyView) -> dict[str, list[Any]]:
        """Argument name -> the values the user stated ("My email is ...") or a tool returned
        bare (under `<word>_id` for each word of the tool's name: `find_user_id_by_email` ->
        `user_id`), in order."""
        names = {param for _, required in self._reads for param in required}
        named: dict[str, list[Any]] = {name: [] for name in names}
        calls = {e.call_id: e.action for e in view.conversation if isinstance(e, AgentTurn) and e.call_id}
        for event in view.conversation:
            found: dict[str, Any] = {}
            if isinstance(event, UserTurn):
                found = stated(event.text, names)
            elif isinstance(event, ToolResultTurn) and not event.error:
                action = calls.get(event.call_id)
                if isinstance(action, ToolCallAction):
                    found = bare_id(event.content, action.name)
            for name, value in found.items():
                if name in named and value not in named[name]:
                    named[name].append(value)
        return named

    def _known(self, view: PolicyView) -> dict[str, list[Any]]:
        """`_named`, and every value a record showed under an argument's name, or listed under
        its plural (`orders: [...]` -> `order_id`, `bill_ids` -> `bill_id`: `listed_argument`):
        everything it can reach."""
        known = self._named(view)

        def add(name: str, value: Any) -> None:
            scalar = isinstance(value, str | int | float) and not isinstance(value, bool)
            if scalar and value not in known[name]:
                known[name].append(value)

        for event in view.conversation:
            if isinstance(event, ToolResultTurn) and not event.error:
                for record in records(event.content):
                    for key, value in record.items():
                        if key in known:
                            add(key, value)
                        elif isinstance(value, list) and listed_argument(key) in known:
                            for item in value:
                                add(listed_argument(key), item)
        return known

    def _candidates(self, view: PolicyView) -> Iterator[tuple[str, dict[str, Any]]]:
        known = self._known(view)
        for name, required in self._reads:
            if all(known.get(param) for param in required):
                for values in islice(product(*(known[param] for param in required)), PER_TOOL):
                    yield name, dict(zip(required, values, strict=True))

    def _refusal(self, view: PolicyView) -> str:
        """The refusal, citing the status of each record (anything with an id: an order, a
        reservation, a bill) that a call made only with values the user gave or a tool returned
        bare fetched: what the user asked about, not every record it reached."""
        named = {json.dumps(value) for values in self._named(view).values() for value in values}
        calls = {e.call_id: e.action for e in view.conversation if isinstance(e, AgentTurn) and e.call_id}
        statuses = []
        for event in view.conversation:
            if not isinstance(event, ToolResultTurn) or event.error:
                continue
            call = calls.get(event.call_id)
            if not isinstance(call, ToolCallAction) or not isinstance(call.arguments, dict):
                continue
            if not all(json.dumps(value) in named for value in call.arguments.values()):
                continue
            for record in records(event.content):
                ids = [key for key in record if key.endswith("_id") and isinstance(record[key], str)]
                if ids and isinstance(record.get("status"), str):
                    statuses.append(f"{record[ids[0]]} is {record['status']}")
        cited = f" I checked your records: {'; '.join(dict.fromkeys(statuses))}." if statuses else ""
        return f"{REFUSAL}{cited} {ANYTHING_ELSE}"


def stated(text: str, names: set[str]) -> dict[str, str]:
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


def bare_id(content: str, tool: str) -> dict[str, str]:
    token = content.strip()
    if not token or " " in token or token[0] in "[{":
        return {}
    return {f"{word}_id": token for word in tool.split("_") if word not in ("find", "by", "id", "verify")}


@lru_cache(maxsize=1024)
def records(content: str) -> tuple[dict[str, Any], ...]:
    """Every JSON object inside a tool result, outermost first (not to be changed: cached, as
    the look-up policies read every earlier result of a trial again at each step; a few hundred
    results of the trials running at once are what the cache must hold, and results can be large)."""
    try:
        queue = deque([json.loads(content)])
    except json.JSONDecodeError:
        return ()
    found = []
    while queue:
        value = queue.popleft()
        if isinstance(value, dict):
            found.append(value)
            queue.extend(value.values())
        elif isinstance(value, list):
            queue.extend(value)
    return tuple(found)
