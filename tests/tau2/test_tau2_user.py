"""The `tau2` user: τ²'s own simulator prompt and guidelines, τ²'s greeting and stop markers, over a
real loopback model server."""

from __future__ import annotations

from castbench.agents.registry import resolve
from castbench.agents.views import user_briefing_for
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
