"""What a model reads: events of the visible conversation as chat messages.

Two styles for the policy:
- `function_calling`: tools go to the provider as native tools; calls and results are native
  `tool_calls` / `tool` messages;
- `prompted` (ReAct style): tools are listed in the system prompt, every action is one JSON
  object in plain text and tool results come back as user messages. It needs nothing of the
  server but chat (llama.cpp drops `tool` messages, for one).

A critique is shown to the policy as the answer to its rejected proposal, so it revises knowing
what was wrong. The critic gets a plain transcript of the same events plus the proposal.
"""

from __future__ import annotations

import json
from typing import Any

from castbench._agents.views import Briefing
from castbench._base.conversation import (
    Action,
    AgentTurn,
    CritiqueTurn,
    Event,
    MalformedAction,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
    Verdict,
)

__all__ = [
    "REPLY",
    "TOOL_RESULT_PREFIX",
    "action_json",
    "critique_text",
    "describe_action",
    "policy_messages",
    "policy_system_prompt",
    "tool_manual",
    "transcript",
]

REPLY = "reply"
"""The prompted style's action name for a message to the user."""
TOOL_RESULT_PREFIX = "Tool result"

_FUNCTION_CALLING_RULES = """
# How to act
You are the agent in this conversation. Use the tools through function calling, one tool call
per turn. To write to the user, answer with a message and no tool call."""

_PROMPTED_RULES = """
# How to answer
Answer every turn with exactly one JSON object and nothing else:
- to call a tool: {"action": "<tool name>", "arguments": {"<argument>": <value>, ...}}
- to write to the user: {"action": "reply", "message": "<your message>"}
You may put "thought": "<your reasoning>" first. One action per turn. Tool results come back in
messages that start with "Tool result"."""


def _type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(_type(option) for option in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    return str(kind)


def tool_manual(tools: tuple[dict[str, Any], ...], write_tools: frozenset[str] = frozenset()) -> str:
    """The tools as compact text (a third of their JSON schema's size, same content)."""
    lines = []
    for tool in tools:
        function = tool.get("function", tool)
        parameters = function.get("parameters", {})
        properties: dict[str, Any] = parameters.get("properties", {})
        required = set(parameters.get("required", []))
        signature = ", ".join(name if name in required else f"{name}?" for name in properties)
        marker = " [changes data]" if function["name"] in write_tools else ""
        lines.append(f"- {function['name']}({signature}){marker}: {function.get('description', '').strip()}")
        for name, schema in properties.items():
            lines.append(f"    {name} ({_type(schema)}): {schema.get('description', '')}".rstrip())
    return "\n".join(lines)


def policy_system_prompt(briefing: Briefing, style: str) -> str:
    if style == "prompted":
        manual = tool_manual(briefing.tools, briefing.write_tools)
        return f"{briefing.policy.strip()}\n\n# Tools\n{manual}\n{_PROMPTED_RULES}"
    if briefing.verbatim_policy:
        return briefing.policy
    return f"{briefing.policy.strip()}\n{_FUNCTION_CALLING_RULES}"


def _arguments_text(action: ToolCallAction) -> str:
    if isinstance(action.arguments, dict):
        return json.dumps(action.arguments)
    return action.arguments


def describe_action(action: Action) -> str:
    if isinstance(action, ToolCallAction):
        return f"call {action.name}({_arguments_text(action)})"
    if isinstance(action, ReplyAction):
        return f"reply to the user: {action.text}"
    return f"unusable output ({action.reason}): {action.raw[:500]}"


def action_json(action: Action) -> str:
    """An action as the prompted style writes it."""
    if isinstance(action, MalformedAction):
        return action.raw[:2000] or "(empty output)"
    if isinstance(action, ReplyAction):
        return json.dumps({"action": REPLY, "message": action.text})
    head = {"thought": action.text} if action.text else {}
    return json.dumps({**head, "action": action.name, "arguments": action.arguments})


def critique_text(verdict: Verdict) -> str:
    parts = ["Reviewer: your proposed action was rejected and was NOT executed."]
    if verdict.failure_type != "none":
        parts.append(f"Problem: {verdict.failure_type.replace('_', ' ')}.")
    if verdict.explanation:
        parts.append(verdict.explanation.strip())
    if verdict.suggested_fix:
        parts.append(f"Suggested fix: {verdict.suggested_fix.strip()}")
    parts.append("Revise your action.")
    return " ".join(parts)


def _tool_result(event: ToolResultTurn) -> str:
    return f"{TOOL_RESULT_PREFIX} ({event.name}): {event.content}"


def _native_action(action: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    """An assistant message; the call id a `tool` message may answer (None: nothing to answer)."""
    if isinstance(action, ToolCallAction):
        content, arguments = action.text, action.arguments
        if not isinstance(arguments, dict):  # keep servers that parse history from choking on it
            content = f"{content}\n(arguments were not valid JSON: {arguments[:500]})".strip()
            arguments = {}
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": action.name, "arguments": json.dumps(arguments)},
        }
        return {"role": "assistant", "content": content, "tool_calls": [call]}, call_id
    if isinstance(action, ReplyAction):
        return {"role": "assistant", "content": action.text}, None
    return {"role": "assistant", "content": action.raw[:2000] or "(empty output)"}, None


def _native_messages(events: tuple[Event, ...]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    open_call: str | None = None
    for position, event in enumerate(events):
        if isinstance(event, UserTurn):
            messages.append({"role": "user", "content": event.text})
            open_call = None
        elif isinstance(event, AgentTurn):
            message, open_call = _native_action(event.action, event.call_id or f"call_at_{position}")
            messages.append(message)
        elif isinstance(event, ToolResultTurn):
            if open_call == event.call_id:
                messages.append({"role": "tool", "tool_call_id": event.call_id, "content": event.content})
            else:  # the answer to an output that was no tool call
                messages.append({"role": "user", "content": _tool_result(event)})
            open_call = None
        else:
            message, open_call = _native_action(event.proposal, f"proposal_{position}")
            messages.append(message)
            feedback = critique_text(event.verdict)
            if open_call is not None:
                messages.append({"role": "tool", "tool_call_id": open_call, "content": feedback})
            else:
                messages.append({"role": "user", "content": feedback})
            open_call = None
    return messages


def _prompted_messages(events: tuple[Event, ...]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for event in events:
        if isinstance(event, UserTurn):
            messages.append({"role": "user", "content": event.text})
        elif isinstance(event, AgentTurn):
            messages.append({"role": "assistant", "content": action_json(event.action)})
        elif isinstance(event, ToolResultTurn):
            messages.append({"role": "user", "content": _tool_result(event)})
        else:
            messages.append({"role": "assistant", "content": action_json(event.proposal)})
            messages.append({"role": "user", "content": critique_text(event.verdict)})
    return messages


def policy_messages(briefing: Briefing, events: tuple[Event, ...], style: str) -> list[dict[str, Any]]:
    system = {"role": "system", "content": policy_system_prompt(briefing, style)}
    body = _prompted_messages(events) if style == "prompted" else _native_messages(events)
    return [system, *body]


def transcript(events: tuple[Event, ...]) -> str:
    """The visible conversation as plain text, one line per event (what a critic reads)."""
    lines = []
    for event in events:
        if isinstance(event, UserTurn):
            lines.append(f"User: {event.text}")
        elif isinstance(event, AgentTurn):
            lines.append(f"Agent: {describe_action(event.action)}")
        elif isinstance(event, ToolResultTurn):
            lines.append(f"{_tool_result(event)}")
        elif isinstance(event, CritiqueTurn):
            lines.append(f"Agent (rejected proposal): {describe_action(event.proposal)}")
            lines.append(critique_text(event.verdict))
    return "\n".join(lines)
