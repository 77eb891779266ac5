"""An agent that reads out every fix the phone has, needed or not, does not pass the telecom device
tasks: the scripted customer does what they are told (every fix in `FIX_STEPS` is among their
device steps), so the fixes a task does not need change the phone (data roaming switched on at
home) and the final state is wrong, as it would be with a real customer."""

from __future__ import annotations

from castbench._agents.registry import AgentSpec, resolve
from castbench._agents.scripted.spray import LookupSprayPolicy
from castbench._agents.views import Briefing, PolicyView
from castbench._base.dialogue import device_instruction
from castbench._run.api import build_config
from castbench._run.plan import plan_trials
from castbench._run.work import ExpectedStates, run_job
from castbench._trial.episode import AgentSet
from castbench.domain import load_domain
from castbench_telecom.scenario import FIX_STEPS

EVERY_FIX = " ".join(device_instruction(instruction) for instruction, *_ in FIX_STEPS.values())


class InstructEverything(LookupSprayPolicy):
    """Looks everything up, then tells the customer to do every fix at once, then sprays."""

    def _spray(self, view: PolicyView) -> str:
        return EVERY_FIX + " " + super()._spray(view)


def _passed(policy: AgentSpec) -> set[str]:
    config, _ = build_config(domains="telecom", policy="scripted:refuse", trials=1)
    agents = AgentSet(policy=policy, user=resolve("user", "scripted"))
    expected = ExpectedStates()
    return {job.task.id for job in plan_trials(config) if run_job(job, config, agents, expected).passed}


def _instructing(briefing: Briefing) -> InstructEverything:
    return InstructEverything(briefing)


def test_every_device_task_offers_the_customer_every_fix() -> None:
    for task in load_domain("telecom").tasks("test"):
        if len(task.scenario.device_steps) > 1:
            tools = {step.call.name for step in task.scenario.device_steps}
            assert len(tools) >= len(FIX_STEPS), task.id


def test_reading_out_every_fix_earns_no_more_than_looking_up_and_refusing() -> None:
    tasks = load_domain("telecom").tasks("test")
    floor = _passed(resolve("policy", "scripted:lookup-refuse"))
    spray = AgentSpec(role="policy", spec="test:every-fix", name="test:every-fix", factory=_instructing)
    passed = _passed(spray)
    beyond = sorted(passed - floor)
    assert len(passed) <= len(floor) + 0.02 * len(tasks), f"reading out every fix passes {beyond}"
