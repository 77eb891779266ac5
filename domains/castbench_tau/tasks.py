"""τ's tasks as castbench tasks, built at load time from the package's own task lists.

What castbench needs beyond τ's `instruction`, `actions` and `outputs` is derived from them:

- `id` is `<pack>-<split>-<index>` (the index in τ's list: `tau-retail-test-7` is τ's retail
  test task 7);
- the ground truth is τ's action list as is, `ordered` (τ replays it in order);
- `outcome` is `change` when the gold calls a tool that writes, else `no_change`;
- `family` names the write tools the gold uses (`read_only` when it uses none);
- the scripted user's opening is the instruction in the first person, and the facts it gives
  when asked are the arguments of an identity look-up that finds the task's customer (an email,
  or a name and a zip code: see `castbench._domain.identity`), worked out by the domain and passed in;
- the LLM users get the instruction verbatim (τ's own user prompt is built from it).
"""

from __future__ import annotations

from typing import Any

from castbench.domain import IDENTITY_PREFIX, Fact, Task, ToolCall, Toolkit, UserScenario, first_person

__all__ = ["IDENTITY_PREFIX", "convert_task", "first_person"]


def _family(actions: list[ToolCall], toolkit: Toolkit) -> str:
    writes = sorted({call.name for call in actions if toolkit.is_write(call.name)})
    return "+".join(writes) if writes else "read_only"


def convert_task(raw: Any, domain: str, split: str, index: int, toolkit: Toolkit, facts: list[Fact]) -> Task:
    """One τ `Task` (user_id, instruction, actions, outputs) as a castbench `Task`; `facts` are
    the customer's identity facts (`castbench._domain.identity`)."""
    actions = [ToolCall(name=action.name, arguments=dict(action.kwargs)) for action in raw.actions]
    writes = any(toolkit.is_write(call.name) for call in actions)
    return Task(
        id=f"{domain}-{split}-{index}",
        split=split,
        family=_family(actions, toolkit),
        outcome="change" if writes else "no_change",
        scenario=UserScenario(
            request=first_person(raw.instruction),
            facts=facts,
            instructions=raw.instruction.strip(),
        ),
        actions=actions,
        required_outputs=list(raw.outputs),
        ordered=True,
    )
