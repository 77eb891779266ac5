"""The oracle policy: replays the task's ground truth through the conversation.

Privileged (it reads the task), so it is an upper bound and a validator of tasks, never a
leaderboard entry. It asks for the user's facts, confirms each write, runs the ground-truth
calls, says the required outputs and closes. If the user declines a write, it does not run it.
"""

from __future__ import annotations

from collections import deque
from typing import ClassVar

from castbench.agents.conversation import Action, ReplyAction, ToolCallAction, UserTurn
from castbench.agents.scripted.dialogue import ANYTHING_ELSE, ask_for, confirmation_request, is_affirmative
from castbench.agents.scripted.plan import PlanStep, build_plan, describe_call
from castbench.agents.views import PolicyView, PrivilegedBriefing
from castbench.domain import ToolCall

__all__ = ["OraclePolicy"]


def _last_user_text(view: PolicyView) -> str:
    for event in reversed(view.conversation):
        if isinstance(event, UserTurn):
            return event.text
    return ""


class OraclePolicy:
    privileged: ClassVar[bool] = True

    def __init__(self, briefing: PrivilegedBriefing) -> None:
        self._briefing = briefing
        self._task = briefing.task
        self._plan: deque[PlanStep] = deque(build_plan(briefing.task, briefing.write_tools))

    def propose(self, view: PolicyView) -> Action:
        critique = view.critique
        if critique is not None:  # its actions are right by construction: it stands by them
            return critique.proposal
        return self._next(view)

    def _next(self, view: PolicyView) -> Action:
        while self._plan:
            step = self._plan.popleft()
            if step.needs_yes and not is_affirmative(_last_user_text(view)):
                continue
            return self._render(step, view)
        return ReplyAction(text=ANYTHING_ELSE)

    def _render(self, step: PlanStep, view: PolicyView) -> Action:
        if step.kind == "ask":
            return ReplyAction(text=ask_for([fact.keywords[0] for fact in self._task.scenario.facts]))
        if step.kind == "confirm":
            assert step.call is not None
            return ReplyAction(text=confirmation_request(describe_call(step.call)))
        if step.kind == "call":
            assert step.call is not None
            return self._call(step.call, view)
        if step.kind == "instruct":
            device_step = next(d for d in self._task.scenario.device_steps if d.call == step.call)
            return ReplyAction(text=f"Please do this on your device: {device_step.instruction}")
        return ReplyAction(text=self._closing())

    def _call(self, call: ToolCall, view: PolicyView) -> Action:
        return ToolCallAction(name=call.name, arguments=dict(call.arguments))

    def _closing(self) -> str:
        parts = []
        if self._task.outcome == "refuse":
            parts.append("I'm sorry, but I can't do that: our policy does not allow it.")
        if self._task.required_outputs:
            parts.append("Here is the information you asked for: " + "; ".join(self._task.required_outputs) + ".")
        parts.append(ANYTHING_ELSE)
        return " ".join(parts)
