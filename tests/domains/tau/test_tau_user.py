"""The `tau` user: τ's own user prompt and opening, over a real loopback model server."""

from __future__ import annotations

from pathlib import Path

from castbench._agents.registry import resolve
from castbench._agents.views import user_briefing_for
from castbench._run.api import evaluate
from castbench_tau.domain import TauDomain
from castbench_tau.user import TAU_GREETING, tau_user_prompt
from tests.models.fault_server import FaultPlan, FaultServer
from tests.support import sqlite_url


def test_tau_user_prompt_and_flow(packs: dict[str, TauDomain]) -> None:
    retail = packs["tau-retail"]
    task = retail.tasks("test")[0]
    replies = iter(
        ["Hi, I want to exchange two items.", "It is yusuf.rossi@example.com", "Thanks! ###STOP###"]
    )
    with FaultServer(lambda body: {"content": next(replies)}, FaultPlan()) as server:
        spec = resolve("user", f"tau?model=openai/user&api_base={server.base_url}")
        assert spec.kind == "model" and spec.name == "tau"
        user = spec.create(user_briefing_for(retail, task, 3, retail.fresh_database()))
        assert user.open() == "Hi, I want to exchange two items."
        first = user.reply("What is your email?")
        assert (first.text, first.stop) == ("It is yusuf.rossi@example.com", False)
        last = user.reply("Done. Anything else?")
        assert last.stop and last.text == "Thanks!"
        messages = server.bodies[-1]["messages"]
    assert messages[0] == {"role": "system", "content": tau_user_prompt(task.scenario.instructions)}
    assert "Instruction: " + task.scenario.instructions in messages[0]["content"]
    assert messages[1] == {"role": "user", "content": TAU_GREETING}
    assert [m["role"] for m in messages[2:]] == ["assistant", "user", "assistant", "user"]


def test_a_run_with_the_tau_user_is_stored(packs: dict[str, TauDomain], tmp_path: Path) -> None:
    answers = iter(["I need help with my order."] + ["Yes, go ahead."] * 40)
    with FaultServer(lambda body: {"content": next(answers, "Thanks ###STOP###")}, FaultPlan()) as server:
        result = evaluate(
            domains="tau-telecom",
            policy="oracle",
            user=f"tau?model=openai/user&api_base={server.base_url}",
            trials=1,
            db=sqlite_url(tmp_path / "tau-user.db"),
        )
    assert result.summary.config.user.startswith("tau?model=openai/user")
    assert result.summary.domains["tau-telecom"].n_trials == len(packs["tau-telecom"].tasks("test"))
