"""The conversation a policy that follows the domain policy holds for a task: ask for the facts,
run the ground-truth actions (each write described and confirmed first), tell the user what they
must be told, close. The oracle replays it; the noisy policy replays it with mistakes."""

from __future__ import annotations

import json
from typing import Literal, NamedTuple

from castbench._domain.task import Task, ToolCall

__all__ = ["PlanStep", "build_plan", "describe_call"]


class PlanStep(NamedTuple):
    kind: Literal["ask", "confirm", "call", "instruct", "final"]
    call: ToolCall | None = None
    needs_yes: bool = False
    """A write call that only runs if the user's last message said yes."""


def describe_call(call: ToolCall) -> str:
    arguments = ", ".join(f"{key}={json.dumps(value)}" for key, value in call.arguments.items())
    return f"{call.name.replace('_', ' ')} ({arguments})"


def build_plan(task: Task, write_tools: frozenset[str]) -> list[PlanStep]:
    """Facts first; then each ground-truth action (user-side ones as an instruction to the
    user, writes after a confirmation); then the writes the user will decline; then close."""
    steps: list[PlanStep] = []
    if task.scenario.facts:
        steps.append(PlanStep("ask"))
    for call in [*task.actions, *task.declined_actions]:
        if call.actor == "user":
            steps.append(PlanStep("instruct", call))
        elif call.name in write_tools:
            steps.append(PlanStep("confirm", call))
            steps.append(PlanStep("call", call, needs_yes=True))
        else:
            steps.append(PlanStep("call", call))
    steps.append(PlanStep("final"))
    return steps
