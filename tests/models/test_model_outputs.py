"""What a model wrote that the harness cannot use is reported as such, never disguised, and a
call's cost is counted even when it got no answer."""

from __future__ import annotations

import pytest

from castbench._agents.models.client import Completion, ModelClient, RawToolCall, TrialKey, capped
from castbench._agents.models.parse import action_from_text, verdict_from_text
from castbench._agents.models.prompts import action_schema
from castbench._agents.models.settings import HOSTED_TIMEOUT_S, LOCAL_TIMEOUT_S, ModelSettings
from castbench._base.conversation import MalformedAction, ToolCallAction, Usage
from castbench._base.errors import FatalInfrastructureError
from tests.models.conftest import litellm_path_key
from tests.models.fault_server import FaultPlan, FaultServer

HELLO = [{"role": "user", "content": "hello"}]


def test_a_tool_call_without_arguments_is_malformed_and_names_what_it_had() -> None:
    action = action_from_text('{"action": "get_user_details", "message": "hi"}')
    assert isinstance(action, MalformedAction)
    assert "without 'arguments'" in action.reason and "'message'" in action.reason
    call = action_from_text('{"action": "get_user_details", "arguments": {"user_id": "u1"}}')
    assert isinstance(call, ToolCallAction) and call.arguments == {"user_id": "u1"}
    extra = action_from_text('{"action": "get_user_details", "arguments": {}, "user_id": "u1"}')
    assert isinstance(extra, ToolCallAction) and '"user_id": "u1"' in extra.text  # reported, not dropped


def test_the_action_schema_requires_arguments_for_a_call_and_a_message_for_a_reply() -> None:
    call, reply = action_schema(["get_user_details"])["anyOf"]
    assert call["required"] == ["action", "arguments"] and call["additionalProperties"] is False
    assert reply["required"] == ["action", "message"] and reply["properties"]["action"]["enum"] == ["reply"]


@pytest.mark.parametrize(
    ("text", "cut", "verdict", "kept"),
    [
        ('{ "verdict": "invalid", "failure_type": "wrong_tool", "expl', True, "invalid", "cut off"),
        ('{ "verdict": "inv', True, "valid", "recorded as 'valid'"),
        ("no idea", False, "valid", "recorded as 'valid'"),
        ('{"verdict": "invalid", "failure_type": "none", "explanation": "x"}', False, "invalid", "'none'"),
    ],
)
def test_unreadable_verdicts_say_what_was_recorded(text: str, cut: bool, verdict: str, kept: str) -> None:
    read = verdict_from_text(text, cut=cut)
    assert read.verdict == verdict and read.parse_error is not None and kept in read.parse_error


def test_a_runaway_answer_is_capped_and_says_so() -> None:
    runaway = Completion("x" * 50_000, (RawToolCall("c", "f", "{" + "a" * 50_000),), "length", Usage())
    cut = capped(runaway, 1_000)
    assert len(cut.text) < 1_200 and "cut this answer at 1,000 of its 50,000" in cut.text
    assert len(cut.tool_calls[0].arguments) < 1_200
    small = Completion("ok", (), "stop", Usage())
    assert capped(small, 1_000) is small


def test_the_default_timeout_fits_the_server() -> None:
    local = ModelSettings(model="openai/x", api_base="http://127.0.0.1:8080/v1")
    assert local.attempt_timeout == LOCAL_TIMEOUT_S
    assert ModelSettings(model="openai/x", api_base="http://localhost:8080/v1").local
    assert ModelSettings(model="openai/gpt-4o-mini").attempt_timeout == HOSTED_TIMEOUT_S
    assert ModelSettings(model="openai/x", api_base="http://10.0.0.5/v1", timeout=5).attempt_timeout == 5


@pytest.mark.parametrize("path", ["openai/echo", "custom_openai/echo"], ids=["lean", "litellm"])
def test_a_timed_out_call_to_a_local_server_is_not_sent_again_and_its_time_is_counted(path: str) -> None:
    with FaultServer(lambda body: {"content": "hi"}, FaultPlan(rates={"slow": 1.0}, slow_s=5.0)) as server:
        key = litellm_path_key(path)
        settings = ModelSettings(model=path, api_base=server.base_url, timeout=0.5, backoff_s=0.01, **key)
        client = ModelClient(settings, "policy", TrialKey(seed=1, trial_index=0))
        with pytest.raises(FatalInfrastructureError, match="not re-sent"):
            client.complete(HELLO)
        assert server.requests == 1  # one request left on the server, not one per retry
    assert client.failed.calls == 1 and client.failed.failed_calls == 1 and client.failed.latency_s >= 0.5
