"""The conversation a policy that follows the domain policy holds for a task: ask for the facts,
run the ground-truth actions (each write described and confirmed first), tell the user what they
must be told, close. The oracle replays it; the noisy policy replays it with mistakes."""

from __future__ import annotations

import json
from typing import Literal, NamedTuple

from castbench.domain import Task, ToolCall

__all__ = ["PlanStep", "build_plan", "describe_call"]


class PlanStep(NamedTuple):
    kind: Literal["ask", "confirm", "call", "final"]
    call: ToolCall | None = None
    needs_yes: bool = False
    """A write call that only runs if the user's last message said yes."""


def describe_call(call: ToolCall) -> str:
    arguments = ", ".join(f"{key}={json.dumps(value)}" for key, value in call.arguments.items())
    return f"{call.name.replace('_', ' ')} ({arguments})"


def build_plan(task: Task, write_tools: frozenset[str]) -> list[PlanStep]:
    steps: list[PlanStep] = []
    if task.scenario.facts:
        steps.append(PlanStep("ask"))
    for call in task.actions:
        if call.name in write_tools:
            steps.append(PlanStep("confirm", call))
            steps.append(PlanStep("call", call, needs_yes=True))
        else:
            steps.append(PlanStep("call", call))
    steps.append(PlanStep("final"))
    return steps
