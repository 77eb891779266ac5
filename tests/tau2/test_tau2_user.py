"""The `tau2` user: τ²'s own simulator prompt and guidelines, τ²'s greeting and stop markers, over a
real loopback model server."""

from __future__ import annotations

from typing import Any

from castbench._agents.registry import resolve
from castbench._agents.views import user_briefing_for
from castbench._base.conversation import UserToolCall
from castbench.domain import load_domain
from castbench_tau2.domain import Tau2Domain
from castbench_tau2.source import import_tau2
from castbench_tau2.user import TAU2_GREETING, tau2_user_prompt
from tests.models.fault_server import FaultPlan, FaultServer


def test_tau2_user_prompt_greeting_and_stop_markers(pack: Tau2Domain) -> None:
    task = pack.tasks("test")[0]
    replies = iter(
        ["Hi, I need help with a booking.", "My user id is x.", "Please transfer me. ###TRANSFER###"]
    )
    with FaultServer(lambda body: {"content": next(replies)}, FaultPlan()) as server:
        spec = resolve("user", f"tau2?model=openai/user&api_base={server.base_url}")
        assert spec.kind == "model" and spec.name == "tau2"
        user = spec.create(user_briefing_for(pack, task, 3, pack.fresh_database()))
        assert user.open() == "Hi, I need help with a booking."
        first = user.reply("What is your user id?")
        assert (first.text, first.stop) == ("My user id is x.", False)
        last = user.reply("I cannot do that.")
        assert last.stop and last.text == "Please transfer me."
        messages = server.bodies[-1]["messages"]
    system = messages[0]["content"]
    assert system == tau2_user_prompt(task.scenario.instructions)
    guidelines = import_tau2("tau2.user.user_simulator").get_global_user_sim_guidelines(use_tools=False)
    assert system.startswith(guidelines.strip()[:200])
    assert str(pack.raw_task(task.id).user_scenario) in system
    assert messages[1] == {"role": "user", "content": TAU2_GREETING}


def test_tau2_user_acts_on_its_own_phone_in_telecom() -> None:
    """Dual control with τ²'s LLM user: given the phone's tools and τ²'s tool-using guidelines, it
    calls a phone tool on the trial's own user state, and the call is recorded for grading."""
    telecom = load_domain("tau2-telecom")
    task = telecom.tasks("small")[0]
    db = telecom.initial_database(task)

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        if body["messages"][-1]["role"] == "tool":
            return {"content": "It says airplane mode is on now."}
        return {"content": None, "tool_calls": [{"name": "toggle_airplane_mode", "arguments": "{}"}]}

    performed: list[UserToolCall] = []
    with FaultServer(respond, FaultPlan()) as server:
        spec = resolve("user", f"tau2?model=openai/user&api_base={server.base_url}")
        user = spec.create(user_briefing_for(telecom, task, 3, db, performed=performed))
        reply = user.reply("Please toggle airplane mode on your phone.")
        first = server.bodies[0]
    assert reply.text == "It says airplane mode is on now."
    assert [call.name for call in performed] == ["toggle_airplane_mode"]
    assert performed[0].error is False and performed[0].content
    assert "toggle_airplane_mode" in {tool["function"]["name"] for tool in first["tools"]}
    with_tools = import_tau2("tau2.user.user_simulator").get_global_user_sim_guidelines(use_tools=True)
    assert first["messages"][0]["content"].startswith(with_tools.strip()[:200])
    assert first["messages"][0]["content"] == tau2_user_prompt(task.scenario.instructions, with_tools=True)
