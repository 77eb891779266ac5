"""Conversations rendered for models: valid chat structure in both styles, critiques shown as
feedback on the rejected proposal, nothing privileged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from castbench._agents.models.parse import action_from_text
from castbench._agents.models.render import action_json, policy_messages, tool_manual, transcript
from castbench._agents.views import Briefing, briefing_for
from castbench._base.conversation import (
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
from castbench.domain import Domain

REJECTION = Verdict(
    verdict="invalid",
    failure_type="domain_violation",
    explanation="The user has not confirmed the cancellation.",
    suggested_fix="Describe the cancellation and ask for a yes.",
)
CANCEL = ToolCallAction(
    name="cancel_pending_order", arguments={"order_id": "#W1", "reason": "no longer needed"}
)

CONVERSATION: tuple[Event, ...] = (
    UserTurn(text="Please cancel order #W1."),
    AgentTurn(
        action=ToolCallAction(name="get_order_details", arguments={"order_id": "#W1"}), call_id="call_0"
    ),
    ToolResultTurn(call_id="call_0", name="get_order_details", content='{"status": "pending"}'),
    AgentTurn(action=MalformedAction(raw="<tool>oops", reason="no JSON action"), call_id="call_1"),
    ToolResultTurn(
        call_id="call_1", name="(malformed)", content="Error: your last output could not be used.", error=True
    ),
    AgentTurn(action=ToolCallAction(name="get_order_details", arguments='{"order_id": '), call_id="call_2"),
    ToolResultTurn(
        call_id="call_2", name="get_order_details", content="Error: arguments are not valid JSON", error=True
    ),
    AgentTurn(action=ReplyAction(text="Shall I cancel it?"), call_id="call_3"),
    ToolResultTurn(
        call_id="call_3", name="(reply)", content="Not executed: the verifier rejected this.", error=True
    ),
    AgentTurn(action=ReplyAction(text="Do you confirm the cancellation of #W1?")),
    UserTurn(text="Yes."),
)


@pytest.fixture
def briefing(retail: Domain) -> Briefing:
    return briefing_for(retail, retail.tasks("test")[0], seed=1, trial_index=0, privileged=False)


def _check_native(messages: list[dict[str, Any]]) -> None:
    """OpenAI's rules: a `tool` message answers a call of the assistant message right before it."""
    open_ids: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_ids
            open_ids.discard(message["tool_call_id"])
            continue
        open_ids = {call["id"] for call in message.get("tool_calls", [])}
        for call in message.get("tool_calls", []):
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
        if message["role"] == "assistant":
            assert message["content"] is not None  # llama.cpp answers None with a 500


def test_function_calling_messages_are_well_formed(briefing: Briefing) -> None:
    messages = policy_messages(briefing, CONVERSATION, "function_calling")
    _check_native(messages)
    assert messages[0]["role"] == "system" and briefing.policy.strip()[:200] in messages[0]["content"]
    roles = [m["role"] for m in messages[1:]]
    assert roles == [
        *("user", "assistant", "tool", "assistant", "user", "assistant", "tool"),
        *("assistant", "user", "assistant", "user"),
    ]
    assert messages[5]["content"].startswith("Tool result ((malformed)): Error")
    assert 'not valid JSON: {"order_id": ' in messages[6]["content"]  # the raw arguments stay visible


def test_prompted_messages_alternate_and_replay_as_actions(briefing: Briefing) -> None:
    messages = policy_messages(briefing, CONVERSATION, "prompted")
    assert (
        "# Tools" in messages[0]["content"]
        and "cancel_pending_order(order_id, reason)" in messages[0]["content"]
    )
    assert all(m["role"] in ("user", "assistant") for m in messages[1:])
    assert all(a["role"] != b["role"] for a, b in zip(messages[1:], messages[2:], strict=False))
    assert action_from_text(messages[2]["content"]) == CONVERSATION[1].action  # type: ignore[union-attr]
    assert messages[3]["content"].startswith("Tool result (get_order_details): ")


@pytest.mark.parametrize("style", ["function_calling", "prompted"])
def test_a_critique_is_feedback_on_the_rejected_proposal(briefing: Briefing, style: str) -> None:
    events = (*CONVERSATION[:3], CritiqueTurn(verdict=REJECTION, proposal=CANCEL))
    messages = policy_messages(briefing, events, style)
    proposal, feedback = messages[-2], messages[-1]
    assert proposal["role"] == "assistant"
    if style == "function_calling":
        _check_native(messages)
        assert proposal["tool_calls"][0]["function"]["name"] == "cancel_pending_order"
        assert feedback["role"] == "tool" and feedback["tool_call_id"] == proposal["tool_calls"][0]["id"]
    else:
        assert proposal["content"] == action_json(CANCEL) and feedback["role"] == "user"
    text = feedback["content"]
    assert "rejected and was NOT executed" in text and "domain violation" in text
    assert REJECTION.explanation in text and "Suggested fix: Describe the cancellation" in text


def test_a_rejected_reply_is_answered_by_a_user_message(briefing: Briefing) -> None:
    events = (CONVERSATION[0], CritiqueTurn(verdict=REJECTION, proposal=ReplyAction(text="Done!")))
    messages = policy_messages(briefing, events, "function_calling")
    assert messages[-2] == {"role": "assistant", "content": "Done!"}
    assert messages[-1]["role"] == "user" and "Reviewer:" in messages[-1]["content"]


def test_nothing_privileged_reaches_the_policy(retail: Domain) -> None:
    task = retail.tasks("test")[0]
    briefing = briefing_for(retail, task, seed=1, trial_index=0, privileged=False)
    for style in ("function_calling", "prompted"):
        text = json.dumps(policy_messages(briefing, (UserTurn(text=task.scenario.request),), style))
        assert task.scenario.instructions[:80] not in text
        assert all(fact.statement not in text for fact in task.scenario.facts)


def test_tool_manual_lists_every_tool_with_its_arguments(briefing: Briefing) -> None:
    manual = tool_manual(briefing.tools, briefing.write_tools)
    for tool in briefing.tools:
        assert f"- {tool['function']['name']}(" in manual
    assert "[changes data]" in manual and "order_id (string):" in manual


def test_the_critic_transcript_shows_every_visible_event() -> None:
    text = transcript(CONVERSATION)
    assert text.splitlines()[0] == "User: Please cancel order #W1."
    assert 'Agent: call get_order_details({"order_id": "#W1"})' in text
    assert "Tool result (get_order_details): " in text and "unusable output" in text
