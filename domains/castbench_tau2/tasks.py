"""τ²'s tasks as castbench tasks, built at load time from the data's own `tasks.json`.

- `id` is `<pack>-<τ² task id>` (`tau2-retail-7` is τ²'s retail task "7"), the same in every
  split that lists it (`split_tasks.json`: `base` holds them all, `train`/`test` partition them);
- the ground truth is τ²'s `evaluation_criteria.actions` as is, `ordered` (τ² replays them in
  order); the required outputs are its `communicate_info`;
- `outcome` is `change` when the gold calls a tool τ² types `WRITE`, else `no_change`;
- the scripted user's opening is the `reason_for_call` in the first person, and the facts it
  gives when asked are those of an identity look-up that finds the task's customer
  (`castbench._domain.identity`), worked out by the domain and passed in;
- the LLM users get τ²'s own rendering of the whole user scenario (`str(task.user_scenario)`,
  what τ²'s user simulator reads).
"""

from __future__ import annotations

from typing import Any

from castbench.domain import Fact, Task, ToolCall, Toolkit, UserScenario, first_person

__all__ = ["convert_task", "gold_calls"]


def gold_calls(raw: Any) -> list[ToolCall]:
    criteria = raw.evaluation_criteria
    actions = (criteria.actions if criteria is not None else None) or []
    return [
        ToolCall(
            name=action.name,
            arguments=dict(action.arguments),
            actor="user" if action.requestor == "user" else "agent",
        )
        for action in actions
    ]


def convert_task(raw: Any, domain: str, split: str, toolkit: Toolkit, facts: list[Fact]) -> Task:
    actions = gold_calls(raw)
    writes = sorted({call.name for call in actions if call.name in toolkit and toolkit.is_write(call.name)})
    scenario = raw.user_scenario
    reason = getattr(scenario.instructions, "reason_for_call", None) or str(scenario.instructions)
    criteria = raw.evaluation_criteria
    return Task(
        id=f"{domain}-{raw.id}",
        split=split,
        family="+".join(writes) if writes else "read_only",
        outcome="change" if writes else "no_change",
        scenario=UserScenario(request=first_person(reason), facts=facts, instructions=str(scenario)),
        actions=actions,
        required_outputs=list((criteria.communicate_info if criteria is not None else None) or []),
        ordered=True,
    )
