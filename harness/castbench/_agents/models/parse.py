"""From what a model wrote to an `Action` or a `Verdict`, never raising.

Whatever the model gets wrong is the model's doing and is kept as data: text that holds no
action becomes a `MalformedAction`; a call of an unknown tool or with arguments that are not JSON
stays a `ToolCallAction` so the environment answers it with an error the agent can read; of
several calls in one answer the first runs and the rest are noted; a prompted tool call without
`arguments` is malformed, naming the keys it had instead (nothing the model wrote is dropped
silently). A critic answer that cannot be read is an unreadable verdict (`Verdict.parse_error`
set): it is recorded as `UNREADABLE_VERDICT` (the action goes ahead, as with no critic) and counted
apart in every summary; a verdict cut off mid-answer keeps its `verdict` when that much was written.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from castbench._agents.models.client import RawToolCall
from castbench._agents.models.render import REPLY
from castbench._base.conversation import Action, MalformedAction, ReplyAction, ToolCallAction, Verdict

__all__ = [
    "UNREADABLE_VERDICT",
    "action_from_text",
    "action_from_tool_calls",
    "find_json_object",
    "is_unreadable",
    "split_thinking",
    "verdict_from_text",
    "without_thinking",
]

_FAILURE_TYPES = ("hallucination", "domain_violation", "wrong_tool", "none")

UNREADABLE_VERDICT: Literal["valid"] = "valid"
"""The recorded choice for a critic answer with no readable verdict: let the action go ahead (as
with no critic), with `parse_error` saying why. Summaries count these apart (`unreadable_verdicts`),
so a critic that cannot answer never passes for one that approves."""

_CUT_VERDICT = re.compile(r'"verdict"\s*:\s*"(valid|invalid)"', re.IGNORECASE)
_CUT_FAILURE = re.compile(r'"failure_type"\s*:\s*"(hallucination|domain_violation|wrong_tool|none)"', re.I)
_PLACED = frozenset({"action", "thought", "arguments"})


_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)


def split_thinking(text: str) -> tuple[str, str]:
    """`text` without its `<think>...</think>` blocks (Qwen3's and other reasoning models'), and
    what was in them (blocks joined by blank lines, tags left out). What a model thinks is not its
    answer: the user, the grader and the parsers read the first, the trial record keeps both. An
    unclosed block (the answer stopped while thinking) runs to the end. A lone `</think>` (a
    template that opened the block in the prompt) ends the thinking before it."""
    thoughts: list[str] = []
    head, closed, tail = text.partition("</think>")
    if closed and "<think>" not in head.lower():
        thoughts.append(head)
        text = tail

    def keep(found: re.Match[str]) -> str:
        inside = found.group(0)
        thoughts.append(inside[len("<think>") : len(inside) - len(found.group(1))])
        return ""

    answer = _THINK.sub(keep, text)
    return answer, "\n\n".join(thought.strip() for thought in thoughts if thought.strip())


def without_thinking(text: str) -> str:
    """`text` without its `<think>...</think>` blocks (`split_thinking`)."""
    return split_thinking(text)[0]


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (whole, fenced, or after some prose), outside any
    `<think>` block (`without_thinking`)."""
    text = without_thinking(text)
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
    """Function-calling style: native tool calls, or text for the user. `<think>` blocks are not
    the answer: they go to the action's `thinking` (a reply of thinking only is malformed)."""
    answer, thinking = split_thinking(text)
    return _with_thinking(_action_from_tool_calls(text, answer, calls), thinking)


def _with_thinking(action: Action, thinking: str) -> Action:
    if thinking and isinstance(action, ToolCallAction | ReplyAction):
        return action.model_copy(update={"thinking": thinking})
    return action


def _action_from_tool_calls(raw: str, text: str, calls: tuple[RawToolCall, ...]) -> Action:
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
    if raw.strip():
        return MalformedAction(raw=raw, reason="no answer after its <think> block: no text and no tool call")
    return MalformedAction(raw=raw, reason="empty answer: no text and no tool call")


def action_from_text(text: str) -> Action:
    """Prompted style: one JSON object {"action": tool or "reply", "arguments"/"message": ...},
    read outside any `<think>` block; the blocks go to the action's `thinking`."""
    return _with_thinking(_action_from_text(text), split_thinking(text)[1])


def _action_from_text(text: str) -> Action:
    found = find_json_object(text)
    if found is None:
        after = "" if without_thinking(text).strip() or not text.strip() else " after its <think> block"
        return MalformedAction(raw=text, reason=f"no JSON action object in the answer{after}")
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
    if "arguments" not in found:
        had = sorted(set(found) - _PLACED)
        where = f"; it had {', '.join(repr(k) for k in had)} instead" if had else ""
        return MalformedAction(raw=text, reason=f"a call of {action.strip()!r} without 'arguments'{where}")
    given = found["arguments"]
    arguments: dict[str, Any] | str
    if isinstance(given, str):
        arguments = _arguments(given)
    elif isinstance(given, dict):
        arguments = given
    else:
        arguments = json.dumps(given)
    stray = {key: found[key] for key in sorted(set(found) - _PLACED)}
    if stray:  # kept with the call (not executed, not dropped): what the parser could not place
        thought = f"{thought}\n[not placed: {json.dumps(stray)[:500]}]".strip()
    return ToolCallAction(name=action.strip(), arguments=arguments, text=thought)


_RECORDED_AS = f"; recorded as {UNREADABLE_VERDICT!r}"


def _unreadable(text: str, problem: str) -> Verdict:
    return Verdict(verdict=UNREADABLE_VERDICT, explanation=text[:500], parse_error=problem + _RECORDED_AS)


def is_unreadable(verdict: Verdict) -> bool:
    """No verdict could be read at all (recorded as `UNREADABLE_VERDICT`), as opposed to an answer
    read in part (cut off after its verdict, an unknown failure type), whose verdict, a flag
    perhaps, stands."""
    return verdict.parse_error is not None and verdict.parse_error.endswith(_RECORDED_AS)


def _cut_off(text: str, cut: bool) -> Verdict | None:
    """What a critic answer cut off at max_tokens already said, when it said its verdict."""
    found = _CUT_VERDICT.search(without_thinking(text)) if cut else None
    if found is None:
        return None
    kind = _CUT_FAILURE.search(without_thinking(text))
    verdict = found.group(1).lower()
    failure_type = kind.group(1).lower() if kind is not None and verdict == "invalid" else "none"
    return Verdict(
        verdict=verdict,  # type: ignore[arg-type]
        failure_type=failure_type,  # type: ignore[arg-type]
        explanation=text[:500],
        parse_error="the answer was cut off at max_tokens; its verdict was read from what it wrote",
    )


def verdict_from_text(text: str, cut: bool = False) -> Verdict:
    """`cut`: the answer stopped at max_tokens (a partial verdict may still be read from it)."""
    found = find_json_object(text)
    if found is None:
        partial = _cut_off(text, cut)
        if partial is not None:
            return partial
        ending = " (cut off at max_tokens)" if cut else ""
        if text.strip() and not without_thinking(text).strip():
            ending += " (it stopped inside its <think> block: allow more tokens or turn thinking off)"
        return _unreadable(text, f"no JSON object in the critic's answer{ending}")
    verdict = str(found.get("verdict", "")).strip().lower()
    if verdict not in ("valid", "invalid"):
        return _unreadable(text, f"verdict {found.get('verdict')!r} is not valid/invalid")
    failure_type = str(found.get("failure_type") or "none").strip().lower().replace(" ", "_")
    problem = None
    if failure_type not in _FAILURE_TYPES:
        problem, failure_type = f"unknown failure_type {found.get('failure_type')!r}", "none"
    if verdict == "valid":
        failure_type = "none"
    elif failure_type == "none" and problem is None:
        problem = "an 'invalid' verdict with failure_type 'none'"
    fix = found.get("suggested_fix")
    return Verdict(
        verdict=verdict,  # type: ignore[arg-type]
        failure_type=failure_type,  # type: ignore[arg-type]
        explanation=str(found.get("explanation") or ""),
        suggested_fix=str(fix) if fix not in (None, "") else None,
        parse_error=problem,
    )
