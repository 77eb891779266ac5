"""The model-backed policy, critic and user, each against a server that answers as told."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from castbench._agents.models.agents import LLMCritic, LLMPolicy, LLMUser, for_role
from castbench._agents.views import Briefing, CriticView, PolicyView, UserBriefing, briefing_for
from castbench._base.conversation import ReplyAction, ToolCallAction, UserTurn
from castbench.domain import Domain, Observation, Task, ToolCall
from tests.models.fault_server import FaultServer


@pytest.fixture
def task(retail: Domain) -> Task:
    return retail.tasks("test")[0]


@pytest.fixture
def briefing(retail: Domain, task: Task) -> Briefing:
    return briefing_for(retail, task, seed=5, trial_index=1, privileged=False)


def _answer(message: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda body: message


def test_for_role() -> None:
    assert (for_role("policy"), for_role("critic"), for_role("user")) == (LLMPolicy, LLMCritic, LLMUser)


def test_function_calling_policy(
    fault_server: Callable[..., FaultServer], briefing: Briefing, task: Task
) -> None:
    calls = [
        {"name": "find_user_id_by_email", "arguments": '{"email": "a@b.c"}'},
        {"name": "calculate", "arguments": "{}"},
    ]
    server = fault_server(_answer({"content": "Looking.", "tool_calls": calls}))
    policy = LLMPolicy(briefing, model="openai/policy", api_base=server.base_url, temperature=0)
    action = policy.propose(PolicyView(briefing, (UserTurn(text=task.scenario.request),)))
    assert isinstance(action, ToolCallAction) and action.arguments == {"email": "a@b.c"}
    assert "1 more tool call(s)" in action.text and action.usage is not None and action.usage.calls == 1
    body = server.bodies[-1]
    assert body["tool_choice"] == "auto" and len(body["tools"]) == len(briefing.tools)
    assert body["temperature"] == 0 and "response_format" not in body


@pytest.mark.parametrize(
    ("response_format", "expected"),
    [
        ("llama_cpp", "json_object"),
        ("json_schema", "json_schema"),
        ("json_object", "json_object"),
        ("none", None),
    ],
)
def test_prompted_policy(
    fault_server: Callable[..., FaultServer],
    briefing: Briefing,
    task: Task,
    response_format: str,
    expected: str | None,
) -> None:
    server = fault_server(_answer({"content": '{"action": "reply", "message": "How can I help?"}'}))
    policy = LLMPolicy(
        briefing,
        model="openai/policy",
        api_base=server.base_url,
        style="prompted",
        response_format=response_format,
    )
    action = policy.propose(PolicyView(briefing, (UserTurn(text=task.scenario.request),)))
    assert isinstance(action, ReplyAction) and action.text == "How can I help?"
    body = server.bodies[-1]
    assert "tools" not in body and "# Tools" in body["messages"][0]["content"]
    assert (body.get("response_format") or {}).get("type") == expected
    if response_format in ("llama_cpp", "json_schema"):
        schema = json.dumps(body["response_format"])
        assert '"reply"' in schema and '"cancel_pending_order"' in schema


def test_critic_sees_only_its_view_and_survives_nonsense(
    fault_server: Callable[..., FaultServer], briefing: Briefing, task: Task
) -> None:
    server = fault_server(_answer({"content": "I think it is fine?"}))
    critic = LLMCritic(
        briefing, model="openai/critic", api_base=server.base_url, response_format="json_schema"
    )
    proposal = ToolCallAction(
        name="cancel_pending_order", arguments={"order_id": "#W1", "reason": "ordered by mistake"}
    )
    verdict = critic.verify(CriticView(briefing, (UserTurn(text=task.scenario.request),), proposal))
    assert verdict.verdict == "valid" and verdict.parse_error is not None and verdict.usage is not None
    text = json.dumps(server.bodies[-1]["messages"])
    assert "cancel_pending_order" in text and briefing.policy[:100] in json.loads(text)[0]["content"]
    assert task.scenario.instructions[:80] not in text
    assert server.bodies[-1]["response_format"]["json_schema"]["schema"]["required"][0] == "verdict"


def test_critic_verdict(fault_server: Callable[..., FaultServer], briefing: Briefing) -> None:
    answer = {
        "verdict": "invalid",
        "failure_type": "hallucination",
        "explanation": "Invented id.",
        "suggested_fix": "Ask.",
    }
    server = fault_server(_answer({"content": json.dumps(answer)}))
    critic = LLMCritic(briefing, model="openai/critic", api_base=server.base_url)
    verdict = critic.verify(CriticView(briefing, (), ReplyAction(text="Done.")))
    assert verdict.flags and verdict.failure_type == "hallucination" and verdict.suggested_fix == "Ask."


def test_user_keeps_its_instructions_and_stops_with_the_token(
    fault_server: Callable[..., FaultServer], task: Task
) -> None:
    replies = iter(["My zip code is 80243.", "No thanks, that is all. ###STOP###"])
    server = fault_server(lambda body: {"content": next(replies)})
    briefing = UserBriefing(domain="retail", scenario=task.scenario, seed=3, traits={"impatience": "high"})
    user = LLMUser(briefing, model="openai/user", api_base=server.base_url)
    assert user.open() == task.scenario.request and server.requests == 0
    first = user.reply("What is your zip code?")
    assert (first.text, first.stop) == ("My zip code is 80243.", False)
    last = user.reply("Anything else?")
    assert last.stop and last.text == "No thanks, that is all."
    system = server.bodies[-1]["messages"][0]
    assert system["role"] == "system" and task.scenario.instructions in system["content"]
    assert "###STOP###" in system["content"] and "impatience: high" in system["content"]
    assert [m["role"] for m in server.bodies[-1]["messages"][1:]] == [
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert user.usage.calls == 2 and user.usage.input_tokens > 0


def test_user_acts_on_its_own_device(fault_server: Callable[..., FaultServer], task: Task) -> None:
    answers = iter(
        [
            {"content": "", "tool_calls": [{"name": "toggle_airplane_mode", "arguments": '{"on": false}'}]},
            {"content": "Done, airplane mode is off."},
        ]
    )
    server = fault_server(lambda body: next(answers))
    performed: list[ToolCall] = []

    def perform(call: ToolCall) -> Observation:
        performed.append(call)
        return Observation(content="airplane mode: off")

    tool = {
        "type": "function",
        "function": {"name": "toggle_airplane_mode", "description": "x", "parameters": {}},
    }
    briefing = UserBriefing(
        domain="telecom", scenario=task.scenario, seed=3, user_tools=(tool,), perform=perform
    )
    user = LLMUser(briefing, model="openai/user", api_base=server.base_url)
    user.open()
    reply = user.reply("Please turn off airplane mode.")
    assert reply.text == "Done, airplane mode is off." and not reply.stop
    assert performed == [ToolCall(name="toggle_airplane_mode", arguments={"on": False}, actor="user")]
    assert server.bodies[-1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "content": "airplane mode: off",
    }
    assert user.usage.calls == 2
