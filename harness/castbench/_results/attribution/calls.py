"""The agent's decisive call: the first executed tool call that put the trial off course for good.

Read against the task's ground truth (its agent-side calls, in order, and the changes the user
declines) and the labeler's verdicts. A call *goes through* when it executed without an error.
Walking the executed calls in order:

- a ground-truth call is decisive only when it skipped a check: a read of the ground truth that
  was still due never goes through, and this call, of another tool, ran in its place (calling
  `get_bills` before `verify_customer_by_id`, which never follows) -> `wrong_tool`;
  a ground-truth call the labeler calls invalid that failed and never went through after it
  (made before the user was authenticated, say) keeps the labeler's failure type;
- a change the user declines that went through -> the labeler's failure type (`domain_violation`);
- any other call stands for a ground-truth call still pending: the one of its tool that shares an
  argument value with it or is the next one due, else the first pending one that never goes
  through. It is decisive when that call never goes through after it and, for a call of another
  tool, no later call even tries that tool (a later try is judged on its own). Its cause: the
  labeler's `wrong_tool`; else for a call of another tool `wrong_tool`; else (the intended tool,
  other arguments) the labeler's `domain_violation` where it found no explicit yes for it (a
  confirmation break: the policy broken), unless the agent's last message named a value of the intended
  call that the call replaced (it confirmed one record and acted on another: `hallucination`),
  else `hallucination`. With nothing pending, an invalid write that went
  through is decisive with the labeler's failure type.

Without the task (a domain not installed) only the labeler's verdicts are read: the first invalid
call that failed with no later call of its tool going through, or an invalid write that went through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from castbench._base.conversation import ReplyAction, ToolCallAction, ToolResultTurn
from castbench._domain.leaves import scalars
from castbench._domain.task import Task, ToolCall
from castbench._records.trial import ActionLabel, StepRecord
from castbench._results.attribution.model import Cause

__all__ = ["DecisiveCall", "decisive_call", "executed_call", "failed", "label_of"]


UNCONFIRMED = "no explicit confirmation"
"""How the labeler's reason for a write made with no explicit yes begins (`_records/metrics/profile.py`
reads it alike)."""


class DecisiveCall(NamedTuple):
    step: int
    cause: Cause
    rule: str
    detail: str


def label_of(step: StepRecord) -> ActionLabel | None:
    """The labeler's verdict on what the step executed."""
    if step.action is None or not step.proposals:
        return None
    return step.proposals[-1].label


def failed(step: StepRecord) -> bool:
    return isinstance(step.observation, ToolResultTurn) and step.observation.error


def executed_call(step: StepRecord) -> ToolCall | None:
    action = step.action
    if isinstance(action, ToolCallAction) and isinstance(action.arguments, dict):
        return ToolCall(name=action.name, arguments=dict(action.arguments))
    return None


def _invalid(label: ActionLabel | None) -> bool:
    return label is not None and label.label == "invalid"


def _label_cause(label: ActionLabel | None) -> Cause:
    kind = label.failure_type if label is not None else "none"
    if kind == "malformed":
        return "malformed_output"
    return "hallucination" if kind == "none" else kind


def _shares(a: ToolCall, b: ToolCall) -> bool:
    return bool(set(scalars(a.arguments)) & set(scalars(b.arguments)))


def _without_task(steps: Sequence[StepRecord], writes: Callable[[str], bool]) -> DecisiveCall | None:
    for position, step in enumerate(steps):
        label, call = label_of(step), executed_call(step)
        if not _invalid(label) or call is None:
            continue
        retried = any(
            (c := executed_call(s)) is not None and c.name == call.name and not failed(s)
            for s in steps[position + 1 :]
        )
        if (failed(step) and not retried) or (not failed(step) and writes(call.name)):
            assert label is not None
            return DecisiveCall(
                step.index, _label_cause(label), "first_unrecovered_invalid_action", label.reason
            )
    return None


class _Executed:
    """The executed calls of a trial, each read once: its canonical form, whether it went
    through, and the last position at which each call went through and each tool was tried. The
    walk below asks "does it go through later?" at every step; answering from these instead of
    re-reading the rest of the trial made it quadratic no more."""

    def __init__(self, steps: Sequence[StepRecord]) -> None:
        self.calls = [executed_call(step) for step in steps]
        self.keys = [call.canonical() if call is not None else None for call in self.calls]
        self.went = [
            call is not None and not failed(step) for call, step in zip(self.calls, steps, strict=True)
        ]
        self._last_through: dict[str, int] = {}
        self._last_tried: dict[str, int] = {}
        for position, (call, key) in enumerate(zip(self.calls, self.keys, strict=True)):
            if call is None or key is None:  # one is None exactly when the other is
                continue
            self._last_tried[call.name] = position
            if self.went[position]:
                self._last_through[key] = position

    def through(self, key: str) -> bool:
        return key in self._last_through

    def through_after(self, key: str, position: int) -> bool:
        return self._last_through.get(key, -1) > position

    def tried_after(self, name: str, position: int) -> bool:
        return self._last_tried.get(name, -1) > position


def _swapped(call: ToolCall, intended: ToolCall, before: Sequence[StepRecord]) -> bool:
    """Did the agent's last message before the call name a value of the intended call that the
    call then replaced (it confirmed one record and acted on another)? Only values of four
    characters or more count (ids, names, dates), not small numbers any message may hold."""
    said = next((s.action.text for s in reversed(before) if isinstance(s.action, ReplyAction)), "")
    made = {str(value) for value in scalars(call.arguments)}
    replaced = [str(v) for v in scalars(intended.arguments) if str(v) not in made and len(str(v)) >= 4]
    return any(value in said for value in replaced)


def decisive_call(
    steps: Sequence[StepRecord], task: Task | None, writes: Callable[[str], bool]
) -> DecisiveCall | None:
    """The trial's decisive call (see the module's docstring): the first executed tool call, in
    the order of `steps`, that put the trial off course for good, with its cause, the rule that
    found it and a line of detail; None when no call did (the trial failed otherwise: a reply, a
    missing change the agent never tried). `task`: the trial's task, whose ground truth the walk
    reads (None, a domain not installed: the labeler's verdicts alone). `writes`: whether a tool
    name is a write of the domain's."""
    if task is None:
        return _without_task(steps, writes)
    walk = _Walk(steps, task, writes)
    for position in range(len(steps)):
        found = walk.at(position)
        if found is not None:
            return found
    return None


class _Walk:
    """The walk over a trial's executed calls against its task's ground truth: what is due, what
    went through so far, and the rules that make a call decisive."""

    def __init__(self, steps: Sequence[StepRecord], task: Task, writes: Callable[[str], bool]) -> None:
        self.steps, self.writes = steps, writes
        self.truth = [(c, c.canonical()) for c in task.actions if c.actor == "agent"]
        self.canon = {key for _, key in self.truth}
        self.declined = {c.canonical() for c in task.declined_actions}
        self.executed = _Executed(steps)
        self.done: set[str] = set()
        """The calls that went through before the step walked."""

    def at(self, position: int) -> DecisiveCall | None:
        """The step at `position`, decisive or not (None)."""
        executed, step = self.executed, self.steps[position]
        call, key = executed.calls[position], executed.keys[position]
        previous = executed.keys[position - 1] if position else None
        if previous is not None and executed.went[position - 1]:
            self.done.add(previous)
        if call is None or key is None or isinstance(step.action, ReplyAction):
            return None
        label = label_of(step)
        pending = [(c, k) for c, k in self.truth if k not in self.done]
        due = pending[0][0] if pending else None
        if key in self.canon:
            return self._ground_truth_call(position, step, call, key, label, due)
        if key in self.declined:
            if failed(step):
                return None
            reason = label.reason if label else ""
            return DecisiveCall(step.index, _label_cause(label), "declined_change_made", reason)
        return self._stand_in(position, step, call, label, pending, due)

    def _ground_truth_call(
        self,
        position: int,
        step: StepRecord,
        call: ToolCall,
        key: str,
        label: ActionLabel | None,
        due: ToolCall | None,
    ) -> DecisiveCall | None:
        """A call of the ground truth: decisive when it skipped a check still due (another
        tool's read that never goes through, nor is tried again), or when the labeler calls it
        invalid and it failed, never going through after."""
        executed = self.executed
        if (
            due is not None
            and due.name != call.name
            and not self.writes(due.name)
            and not executed.through(due.canonical())
            and not executed.tried_after(due.name, position)
        ):
            return DecisiveCall(
                step.index, "wrong_tool", "skipped_check", f"called {call.name} before {due.name}"
            )
        if _invalid(label) and failed(step) and not executed.through_after(key, position):
            reason = label.reason if label else ""
            return DecisiveCall(step.index, _label_cause(label), "first_unrecovered_invalid_action", reason)
        return None

    def _stand_in(
        self,
        position: int,
        step: StepRecord,
        call: ToolCall,
        label: ActionLabel | None,
        pending: list[tuple[ToolCall, str]],
        due: ToolCall | None,
    ) -> DecisiveCall | None:
        """A call outside the ground truth, standing for the pending call it was meant as: decisive
        when that call never goes through after it (and, for another tool's, that tool is not
        tried again); with nothing pending, when it is an invalid write that went through."""
        same = [c for c, _ in pending if c.name == call.name and (_shares(call, c) or c is due)]
        intended = same[0] if same else next((c for c, k in pending if not self.executed.through(k)), None)
        if intended is None:
            if _invalid(label) and not failed(step) and self.writes(call.name):
                assert label is not None
                return DecisiveCall(step.index, _label_cause(label), "unwarranted_change", label.reason)
            return None
        if self.executed.through_after(intended.canonical(), position):
            return None
        if intended.name != call.name and self.executed.tried_after(intended.name, position):
            return None
        cause = _stand_in_cause(call, intended, label, lambda: self.steps[:position])
        detail = label.reason if _invalid(label) and label is not None else "a call in place of"
        return DecisiveCall(
            step.index,
            cause,
            "stands_for_missing_call",
            f"{detail}; {intended.canonical()} never went through",
        )


def _stand_in_cause(
    call: ToolCall,
    intended: ToolCall,
    label: ActionLabel | None,
    before: Callable[[], Sequence[StepRecord]],
) -> Cause:
    """Why a call stood for `intended`: the labeler's `wrong_tool`, or another tool's call;
    a change with no explicit yes (the labeler's `domain_violation`), unless the agent's last
    message named a value the call replaced; else `hallucination`. `before`: the steps before it."""
    if label is not None and label.failure_type == "wrong_tool":
        return "wrong_tool"
    if intended.name != call.name:
        return "wrong_tool"
    if (
        _invalid(label)
        and label is not None
        and label.failure_type == "domain_violation"
        and label.reason.startswith(UNCONFIRMED)
        and not _swapped(call, intended, before())
    ):
        return "domain_violation"  # a change made with no explicit yes: the policy broken
    return "hallucination"
