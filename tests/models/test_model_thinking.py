"""Reasoning models: `enable_thinking` reaches the chat template, and `<think>` blocks reach no
one but the trial record.

Every role's 'model' (the scripted responder on a loopback server) opens each answer with a
`<think>` block. The run must score as the same run without thinking (the oracle passes every
task), no request may show any role a `<think>` block (the user hears replies without it, the
critic and the policy's next prompt read none), and the record keeps the policy's thinking.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from castbench._agents.models.parse import (
    action_from_text,
    action_from_tool_calls,
    split_thinking,
    verdict_from_text,
)
from castbench._agents.models.settings import model_settings
from castbench._agents.registry import AgentSpecError
from castbench._base.conversation import ReplyAction, ToolCallAction
from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench.domain import Domain
from tests.models.fault_server import FaultServer
from tests.models.responder import ScriptedResponder, unique_openings
from tests.support import sqlite_url

SECRET = "the scenario says to insist on a refund"


class Thinking:
    """The wrapped responder's answers, each after a `<think>` block naming the role."""

    def __init__(self, inner: ScriptedResponder) -> None:
        self.inner = inner

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        message = self.inner(body)
        thought = f"<think>{SECRET} ({body['model']})</think>\n"
        return {**message, "content": thought + (message.get("content") or "")}


@pytest.mark.parametrize("style", ["function_calling", "prompted"])
def test_thinking_is_switched_off_and_kept_from_everyone_but_the_record(
    style: str, retail: Domain, fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    tasks = [task.id for task in unique_openings(retail.tasks("test"))[:2]]
    server = fault_server(Thinking(ScriptedResponder(retail, retail.tasks("test"))))
    db = sqlite_url(tmp_path / "runs.db")

    def spec(role: str, extra: str = "") -> str:
        return f"openai/{role}?api_base={server.base_url}{extra}"

    argv = ["eval", "--details", "--domain", "retail", "--tasks", ",".join(tasks), "--trials", "1"]
    argv += ["--policy", spec("policy", f"&style={style}&enable_thinking=false")]
    argv += ["--critic", spec("critic"), "--user", spec("user"), "--db", db]
    argv += ["--output", str(tmp_path / "summary.json")]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output

    summary = json.loads((tmp_path / "summary.json").read_text())["overall"]
    assert summary["pass_hat"]["1"] == 1.0 and summary["end_reasons"] == {"user_stop": 2}
    for body in server.bodies:
        assert "<think>" not in json.dumps(body["messages"]) and SECRET not in json.dumps(body["messages"])
        switch = body.get("chat_template_kwargs")
        assert switch == ({"enable_thinking": False} if body["model"] == "policy" else None)

    store = ResultsStore(db)
    run = store.run("latest")
    assert store.config(run.id).extra["models"]["policy"]["enable_thinking"] is False  # its identity
    for record in store.trials(run.id):
        actions = [step.action for step in record.steps if step.action is not None]
        assert actions and all(isinstance(a, ToolCallAction | ReplyAction) for a in actions)
        for action in actions:
            assert action.thinking == f"{SECRET} (policy)"  # type: ignore[union-attr]
            assert "<think>" not in action.model_dump_json(exclude={"thinking"})
        for step in record.steps:
            for proposal in step.proposals:
                assert proposal.verdict is None or proposal.verdict.parse_error is None


def test_a_reply_of_thinking_only_is_malformed_and_keeps_what_it_wrote() -> None:
    action = action_from_tool_calls("<think>I should greet them</think>  ", ())
    assert action.kind == "malformed" and "after its <think> block" in action.reason  # type: ignore[union-attr]
    assert action.raw == "<think>I should greet them</think>  "  # type: ignore[union-attr]
    reply = action_from_tool_calls("done thinking</think>Hello!", ())  # the template opened it
    assert reply == ReplyAction(text="Hello!", thinking="done thinking")
    assert "thinking" not in ReplyAction(text="Hello!").model_dump()  # old records read the same
    prompted = action_from_text('<think>{"action": "reply", "message": "draft"}')
    assert prompted.kind == "malformed" and prompted.reason.endswith("after its <think> block")  # type: ignore[union-attr]


def test_split_thinking_keeps_every_block_and_the_verdict_parser_uses_it() -> None:
    assert split_thinking('<think>a</think>{"x": 1}<THINK>b') == ('{"x": 1}', "a\n\nb")
    verdict = verdict_from_text('<think>{"verdict": "invalid"}</think>{"verdict": "valid"}')
    assert verdict.verdict == "valid" and verdict.parse_error is None


def test_enable_thinking_is_only_for_a_server_of_ones_own() -> None:
    settings = model_settings(
        "policy",
        "openai/q",
        {"model": "openai/q", "api_base": "http://127.0.0.1:9/v1", "enable_thinking": "true"},
    )
    assert settings.generation == {"chat_template_kwargs": {"enable_thinking": True}}
    merged = settings.model_copy(update={"chat_template_kwargs": {"foo": 1}})
    assert merged.generation["chat_template_kwargs"] == {"foo": 1, "enable_thinking": True}
    with pytest.raises(AgentSpecError, match="enable_thinking switches the chat template") as refused:
        model_settings("policy", "openai/gpt-4o", {"model": "openai/gpt-4o", "enable_thinking": "false"})
    assert "'':" not in str(refused.value)
