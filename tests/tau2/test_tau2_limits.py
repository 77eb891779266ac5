"""τ²'s own limits on its packs: a run's default (200 messages as τ² counts them, 10 tool errors),
`--max-steps` replacing them, and every ending the same as τ²'s orchestrator gives the same
trajectory (its `max_steps` / `too_many_errors` at the same message)."""

from __future__ import annotations

from typing import Any

import pytest

from castbench._base.conversation import UserTurn
from castbench._base.dialogue import ANYTHING_ELSE, asks_anything_else
from castbench._records.config import Limits
from castbench._run.options import DEFAULTS
from castbench.domain import load_domain
from castbench_authoring.parity import Step, Trajectory, castbench_trial, closing
from castbench_tau2.domain import TAU2_LIMITS, Tau2Domain
from castbench_tau2.messages import TERMINATION
from castbench_tau2.source import import_tau2


def test_tau2_packs_run_under_tau2s_limits_unless_max_steps_is_given() -> None:
    retail, airline, tau = (load_domain(name) for name in ("tau2-retail", "tau2-airline", "tau-retail"))
    limits = DEFAULTS.limits_for([retail, airline])
    assert limits == Limits(max_steps=100, max_messages=200, max_tool_errors=10)
    assert limits.describe() == "100 agent actions, 200 messages (τ²'s count), 10 tool errors"
    assert DEFAULTS.limits_for([retail, tau]) == Limits()  # packs whose defaults differ: castbench's
    assert DEFAULTS.limits_for([tau]) == Limits()


def test_runs_without_the_new_limits_keep_their_identity() -> None:
    assert Limits().model_dump(mode="json") == {"max_steps": 40}
    assert Limits.model_validate({"max_steps": 40}).model_dump() == {"max_steps": 40}


class _ReplayAgent:
    """τ²'s side: an agent of τ²'s orchestrator that says what the trajectory says."""

    def __init__(self, trajectory: Trajectory) -> None:
        self._steps = list(trajectory)
        self._message = import_tau2("tau2.data_model.message")

    def get_init_state(self, message_history: Any = None) -> None:
        return None

    def generate_next_message(self, message: Any, state: Any) -> tuple[Any, Any]:
        step = self._steps.pop(0) if self._steps else Step.say(ANYTHING_ELSE)
        if step.kind == "say":
            return self._message.AssistantMessage(role="assistant", content=step.text), state
        call = self._message.ToolCall(
            id=f"c{len(self._steps)}", name=step.name, arguments=step.kwargs, requestor="assistant"
        )
        return self._message.AssistantMessage(role="assistant", content=None, tool_calls=[call]), state

    def stop(self, message: Any = None, state: Any = None) -> None:
        return None

    @classmethod
    def is_stop(cls, message: Any) -> bool:
        return False

    def set_seed(self, seed: int) -> None:
        return None


class _ReplayUser:
    """castbench's parity user as τ²'s: "ok", and τ²'s stop token when asked for anything else."""

    def __init__(self, opening: str) -> None:
        self._opening, self._message = opening, import_tau2("tau2.data_model.message")

    def get_init_state(self, message_history: Any = None) -> None:
        return None

    def generate_next_message(self, message: Any, state: Any) -> tuple[Any, Any]:
        text = message.content or ""
        said = self._opening if self._opening else ("###STOP###" if asks_anything_else(text) else "ok")
        self._opening = ""
        return self._message.UserMessage(role="user", content=said), state

    def stop(self, message: Any = None, state: Any = None) -> None:
        return None

    def set_seed(self, seed: int) -> None:
        return None


def _tau2_run(pack: Tau2Domain, task_id: str, trajectory: Trajectory, opening: str) -> Any:
    name = pack.name.removeprefix("tau2-")
    orchestrator = import_tau2("tau2.orchestrator.orchestrator").Orchestrator(
        domain=name,
        agent=_ReplayAgent(trajectory),
        user=_ReplayUser(opening),
        environment=import_tau2("tau2.registry").registry.get_env_constructor(name)(),
        task=pack.raw_task(task_id),
        max_steps=TAU2_LIMITS["max_messages"],
        max_errors=TAU2_LIMITS["max_tool_errors"],
    )
    return orchestrator.run()


MISSING = Step.call("find_user_id_by_email", {"email": "nobody@example.com"})  # τ²: "Error: User not found"
READ = Step.call("list_all_product_types", {})
CASES = {
    "ten tool errors": (*[READ] * 3, *[MISSING] * 12, closing([])),
    "errors after many reads": (*[READ] * 90, *[MISSING] * 10, closing([])),
    "100 actions, the last a call": (*[READ] * 120, closing([])),
    "100 actions, the last a reply": (*[READ] * 99, closing([])),
    "99 actions": (*[READ] * 98, closing([])),
    "nine errors": (*[MISSING] * 9, closing([])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_endings_are_tau2s_orchestrators(case: str) -> None:
    pack = load_domain("tau2-retail")
    assert isinstance(pack, Tau2Domain)
    task = pack.task("tau2-retail-0")
    trajectory = CASES[case]
    record = castbench_trial(pack, task, trajectory, pack.replay(task), Limits.model_validate(TAU2_LIMITS))
    theirs = _tau2_run(pack, "0", trajectory, record.opening)
    ours = TERMINATION[record.end_reason]
    assert ours == theirs.termination_reason.value, case
    said = [m for m in theirs.messages if m.role == "assistant"][1:]  # after τ²'s greeting
    assert len(record.steps) == len(said), case
    answered = sum(isinstance(step.observation, UserTurn) for step in record.steps)
    assert answered + 1 == sum(m.role == "user" for m in theirs.messages), case  # + the opening
