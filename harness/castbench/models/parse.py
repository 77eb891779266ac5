"""From what a model wrote to an `Action` or a `Verdict`, never raising.

Whatever the model gets wrong is the model's doing and is kept as data: text that holds no
action becomes a `MalformedAction`; a call of an unknown tool or with arguments that are not JSON
stays a `ToolCallAction` so the environment answers it with an error the agent can read; of
several calls in one answer the first runs and the rest are noted. A critic answer that cannot be
read gives a `valid` verdict with `parse_error` set (the action goes ahead, as with no critic).
"""

from __future__ import annotations

import json
from typing import Any

from castbench.agents.conversation import Action, MalformedAction, ReplyAction, ToolCallAction, Verdict
from castbench.models.client import RawToolCall
from castbench.models.render import REPLY

__all__ = ["action_from_text", "action_from_tool_calls", "find_json_object", "verdict_from_text"]

_FAILURE_TYPES = ("hallucination", "domain_violation", "wrong_tool", "none")


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (whole, fenced, or after some prose)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def _arguments(raw: str) -> dict[str, Any] | str:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    return value if isinstance(value, dict) else raw


def action_from_tool_calls(text: str, calls: tuple[RawToolCall, ...]) -> Action:
    """Function-calling style: native tool calls, or text for the user."""
    if calls:
        first, rest = calls[0], calls[1:]
        note = text.strip()
        if rest:
            ignored = ", ".join(call.name for call in rest)
            note = (
                f"{note}\n[{len(rest)} more tool call(s) in the same answer not executed: {ignored}]".strip()
            )
        return ToolCallAction(name=first.name, arguments=_arguments(first.arguments), text=note)
    if text.strip():
        return ReplyAction(text=text.strip())
    return MalformedAction(raw=text, reason="empty answer: no text and no tool call")


def action_from_text(text: str) -> Action:
    """Prompted style: one JSON object {"action": tool or "reply", "arguments"/"message": ...}."""
    found = find_json_object(text)
    if found is None:
        return MalformedAction(raw=text, reason="no JSON action object in the answer")
    action = found.get("action")
    if not isinstance(action, str) or not action.strip():
        return MalformedAction(raw=text, reason="the JSON object has no 'action' name")
    thought = found.get("thought")
    thought = thought.strip() if isinstance(thought, str) else ""
    if action.strip() == REPLY:
        message = found.get("message")
        if not isinstance(message, str) or not message.strip():
            return MalformedAction(raw=text, reason="a reply without a 'message'")
        return ReplyAction(text=message.strip())
    arguments = found.get("arguments", {})
    if isinstance(arguments, str):
        arguments = _arguments(arguments)
    elif not isinstance(arguments, dict):
        arguments = json.dumps(arguments)
    return ToolCallAction(name=action.strip(), arguments=arguments, text=thought)


def verdict_from_text(text: str) -> Verdict:
    found = find_json_object(text)
    if found is None:
        return Verdict(
            verdict="valid", explanation=text[:500], parse_error="no JSON object in the critic's answer"
        )
    verdict = str(found.get("verdict", "")).strip().lower()
    if verdict not in ("valid", "invalid"):
        return Verdict(
            verdict="valid",
            explanation=text[:500],
            parse_error=f"verdict {found.get('verdict')!r} is not valid/invalid",
        )
    failure_type = str(found.get("failure_type") or "none").strip().lower().replace(" ", "_")
    problem = None
    if failure_type not in _FAILURE_TYPES:
        problem, failure_type = f"unknown failure_type {found.get('failure_type')!r}", "none"
    if verdict == "valid":
        failure_type = "none"
    fix = found.get("suggested_fix")
    return Verdict(
        verdict=verdict,  # type: ignore[arg-type]
        failure_type=failure_type,  # type: ignore[arg-type]
        explanation=str(found.get("explanation") or ""),
        suggested_fix=str(fix) if fix not in (None, "") else None,
        parse_error=problem,
    )
