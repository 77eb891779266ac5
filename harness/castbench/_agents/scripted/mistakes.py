"""The three CAST error kinds, made on purpose from a correct tool call.

- hallucination: one argument replaced by an invented value of the same shape (preferably an id
  of the same form that the conversation did show, so the wrong call can succeed);
- wrong tool: a different tool of the same kind, keeping the arguments the two share;
- domain violation: a write executed without asking the user to confirm (done by the policy, not
  here, since it is about the conversation rather than the call).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from typing import Any

from castbench._domain.task import ToolCall

__all__ = ["hallucinate", "wrong_tool"]

_TOKEN = re.compile(r"[#\w-]*\d[#\w-]*")


def _shape(value: str) -> str:
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", value)))


def _invent(value: str, rng: random.Random) -> str:
    digits = [i for i, ch in enumerate(value) if ch.isdigit()]
    chars = list(value)
    for position in digits[-3:]:
        chars[position] = str(rng.randrange(10))
    invented = "".join(chars)
    if invented == value and digits:
        last = digits[-1]
        chars[last] = str((int(value[last]) + 1) % 10)
        invented = "".join(chars)
    return invented if invented != value else value + "x"


def _swap_string(value: str, seen: Iterable[str], rng: random.Random) -> str:
    shape = _shape(value)
    candidates = sorted({token for token in seen if token != value and _shape(token) == shape})
    if candidates:
        return rng.choice(candidates)
    return _invent(value, rng)


def hallucinate(call: ToolCall, schema: dict[str, Any], seen_text: str, rng: random.Random) -> ToolCall:
    """`call` with one argument replaced by a plausible but unsupported value."""
    properties = schema["function"]["parameters"].get("properties", {})
    seen = _TOKEN.findall(seen_text)
    choices = []
    for name, value in call.arguments.items():
        enum = properties.get(name, {}).get("enum")
        if enum and len(enum) > 1:
            choices.append((name, rng.choice([option for option in enum if option != value])))
        elif isinstance(value, str) and any(ch.isdigit() for ch in value):
            choices.append((name, _swap_string(value, seen, rng)))
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            position = rng.randrange(len(value))
            changed = list(value)
            changed[position] = _swap_string(value[position], seen, rng)
            choices.append((name, changed))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            choices.append((name, value + rng.choice([-1, 1]) * max(1, abs(value) // 10)))
    if not choices:
        return call
    name, value = rng.choice(choices)
    return ToolCall(name=call.name, arguments={**call.arguments, name: value})


def wrong_tool(
    call: ToolCall, schemas: Iterable[dict[str, Any]], write_tools: frozenset[str], rng: random.Random
) -> ToolCall:
    """A different tool of the same kind (write for write), sharing as many argument names as
    possible; returns `call` unchanged when the domain has no such tool."""
    is_write = call.name in write_tools
    scored = []
    for schema in schemas:
        name = schema["function"]["name"]
        if name == call.name or (name in write_tools) != is_write:
            continue
        params = set(schema["function"]["parameters"].get("properties", {}))
        scored.append((len(params & set(call.arguments)), name, params))
    if not scored:
        return call
    best = max(score for score, _, _ in scored)
    _, name, params = rng.choice([entry for entry in scored if entry[0] == best])
    return ToolCall(name=name, arguments={k: v for k, v in call.arguments.items() if k in params})
