"""Whatever a model writes becomes an action or a verdict: its mistakes are data, never a crash."""

from __future__ import annotations

import pytest

from castbench._agents.models.client import RawToolCall
from castbench._agents.models.parse import (
    action_from_text,
    action_from_tool_calls,
    find_json_object,
    verdict_from_text,
)
from castbench._base.conversation import MalformedAction, ReplyAction, ToolCallAction


def _call(name: str, arguments: str) -> RawToolCall:
    return RawToolCall("call_0", name, arguments)


def test_one_tool_call_with_json_arguments() -> None:
    action = action_from_tool_calls("", (_call("get_order_details", '{"order_id": "#W1"}'),))
    assert action == ToolCallAction(name="get_order_details", arguments={"order_id": "#W1"})


def test_several_calls_run_the_first_and_note_the_rest() -> None:
    calls = (_call("a", "{}"), _call("b", "{}"), _call("c", "{}"))
    action = action_from_tool_calls("Let me check.", calls)
    assert isinstance(action, ToolCallAction) and action.name == "a"
    assert (
        action.text.startswith("Let me check.")
        and "2 more tool call(s)" in action.text
        and "b, c" in action.text
    )


def test_text_along_with_a_call_is_kept_with_the_call() -> None:
    action = action_from_tool_calls("One moment.", (_call("a", "{}"),))
    assert isinstance(action, ToolCallAction) and action.text == "One moment."


@pytest.mark.parametrize("raw", ['{"order_id": ', "order_id=1", "[1, 2]"])
def test_arguments_that_are_not_a_json_object_stay_raw_for_the_environment_to_reject(raw: str) -> None:
    action = action_from_tool_calls("", (_call("get_order_details", raw),))
    assert isinstance(action, ToolCallAction) and action.arguments == raw


def test_empty_arguments_mean_none() -> None:
    assert action_from_tool_calls("", (_call("list_all_product_types", ""),)).arguments == {}  # type: ignore[union-attr]


def test_an_unknown_tool_is_still_a_call_the_environment_answers() -> None:
    action = action_from_tool_calls("", (_call("frobnicate", "{}"),))
    assert isinstance(action, ToolCallAction) and action.name == "frobnicate"


def test_text_only_is_a_reply_and_nothing_is_malformed() -> None:
    assert action_from_tool_calls(" Hello! ", ()) == ReplyAction(text="Hello!")
    nothing = action_from_tool_calls("", ())
    assert isinstance(nothing, MalformedAction) and "empty answer" in nothing.reason


@pytest.mark.parametrize(
    "text",
    [
        '{"action": "get_order_details", "arguments": {"order_id": "#W1"}}',
        'Thought: I need it.\nAction: {"action": "get_order_details", "arguments": {"order_id": "#W1"}}',
        '```json\n{"action": "get_order_details", "arguments": "{\\"order_id\\": \\"#W1\\"}"}\n```',
    ],
)
def test_prompted_actions_are_found_in_plain_fenced_or_react_text(text: str) -> None:
    action = action_from_text(text)
    assert isinstance(action, ToolCallAction)
    assert action.name == "get_order_details" and action.arguments == {"order_id": "#W1"}


def test_prompted_reply_and_thought() -> None:
    assert action_from_text('{"action": "reply", "message": "Hi there"}') == ReplyAction(text="Hi there")
    action = action_from_text(
        '{"thought": "need id", "action": "get_user_details", "arguments": {"user_id": "x"}}'
    )
    assert isinstance(action, ToolCallAction) and action.text == "need id"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I will look it up.", "no JSON action"),
        ('{"action": "get_order', "no JSON action"),
        ('{"arguments": {}}', "no 'action'"),
        ('{"action": "reply"}', "without a 'message'"),
        ('{"action": "reply", "message": "  "}', "without a 'message'"),
    ],
)
def test_prompted_answers_without_a_usable_action_are_malformed(text: str, reason: str) -> None:
    action = action_from_text(text)
    assert isinstance(action, MalformedAction) and reason in action.reason and action.raw == text


def test_non_object_arguments_are_kept_raw() -> None:
    action = action_from_text('{"action": "calculate", "arguments": [1, 2]}')
    assert isinstance(action, ToolCallAction) and action.arguments == "[1, 2]"


def test_find_json_object_skips_braces_that_are_not_json() -> None:
    assert find_json_object('use {curly} then {"a": 1}') == {"a": 1}
    assert find_json_object("no json here") is None


def test_a_full_verdict() -> None:
    verdict = verdict_from_text(
        '{"verdict": "INVALID", "failure_type": "domain violation", "explanation": "No confirmation.",'
        ' "suggested_fix": "Ask the user to confirm."}'
    )
    assert verdict.verdict == "invalid" and verdict.failure_type == "domain_violation"
    assert verdict.explanation == "No confirmation." and verdict.suggested_fix == "Ask the user to confirm."
    assert verdict.parse_error is None and verdict.flags


def test_a_valid_verdict_has_no_failure_type() -> None:
    verdict = verdict_from_text('{"verdict": "valid", "failure_type": "wrong_tool", "explanation": "ok"}')
    assert verdict.verdict == "valid" and verdict.failure_type == "none" and verdict.suggested_fix is None


@pytest.mark.parametrize("text", ["looks fine to me", '{"verdict": "maybe"}', '{"explanation": "x"}'])
def test_unreadable_verdicts_default_to_valid_with_the_parse_error_recorded(text: str) -> None:
    verdict = verdict_from_text(text)
    assert verdict.verdict == "valid" and verdict.parse_error is not None and not verdict.flags


def test_an_unknown_failure_type_is_recorded() -> None:
    verdict = verdict_from_text('{"verdict": "invalid", "failure_type": "rudeness", "explanation": "x"}')
    assert verdict.verdict == "invalid" and verdict.failure_type == "none"
    assert verdict.parse_error is not None and "rudeness" in verdict.parse_error
