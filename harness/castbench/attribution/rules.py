"""Rule-based attribution of a stored trial: the first decisive step, the party and the cause.

Read from what every trial stores (the labeler's verdict on each executed action, the grade with
its state diff, the end reason, the transcript) and, where the domain is installed, the
privileged task (its ground-truth calls and the user's scenario), as the labeler reads it. It
never reads what a scripted policy meant to do. Decision order for a trial that did not pass:

1. unscored: the simulated user failed (`user_error`), or the harness or infrastructure did
   (`harness_error`, `infra_error`);
2. the earliest of: the first executed action the labeler called invalid that was not recovered
   (`first_unrecovered_invalid_action`: its intended ground-truth call, the one of the same tool,
   or sharing the most argument values, that had not gone through yet, never went through after
   it), and the first decisive simulator fault (`castbench.attribution.user_faults`);
   a write the labeler calls a domain violation for want of a yes, right after the user said
   yes to a different change, is what the agent changed, not what it asked: a hallucinated
   argument of a ground-truth tool, else the wrong tool;
3. a non-decisive simulator fault (a leak, a broken persona) when the conversation stopped short
   of the change (`missing_state_change`, unfinished) and the agent did nothing invalid;
4. the agent's own end (`agent_error`, `timeout`, `ran_out_of_steps`), else the grade's failure
   category, at the step that shows it (`grade_category`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from castbench.agents.conversation import MalformedAction, ReplyAction, ToolCallAction, ToolResultTurn
from castbench.attribution.model import Attribution, Cause, Evidence, NearMiss, UserFault, party_of
from castbench.attribution.user_faults import user_faults
from castbench.domain import Domain, Task, ToolCall, load_domain
from castbench.domain.leaves import scalars
from castbench.runner.records import ActionLabel, StepRecord, TrialRecord

__all__ = ["attribute", "context", "near_miss"]

_DIFF_SHOWN = 5
_UNSCORED = {"infra_error": "infra_error", "harness_error": "harness_error"}
_CATEGORY: dict[str, Cause] = {
    "tool_error_unrecovered": "tool_error_unrecovered",
    "missing_state_change": "missing_state_change",
    "wrong_state_update": "wrong_state_update",
    "incomplete_reply": "incomplete_reply",
    "unearned_outcome": "unearned_outcome",
    "did_not_finish": "ran_out_of_steps",
}


@cache
def _domain(name: str) -> Domain | None:
    try:
        return load_domain(name)
    except Exception:  # not installed here: the rules that need no task still apply
        return None


@cache
def context(domain: str, task_id: str) -> tuple[Domain | None, Task | None]:
    """The installed domain and the task a record names (None for what is not installed)."""
    found = _domain(domain)
    if found is None:
        return None, None
    try:
        return found, found.task(task_id)
    except (KeyError, ValueError):
        return found, None


def _label(step: StepRecord) -> ActionLabel | None:
    if step.action is None or not step.proposals:
        return None
    return step.proposals[-1].label


def _failed(step: StepRecord) -> bool:
    return isinstance(step.observation, ToolResultTurn) and step.observation.error


def _call(step: StepRecord) -> ToolCall | None:
    action = step.action
    if isinstance(action, ToolCallAction) and isinstance(action.arguments, dict):
        return ToolCall(name=action.name, arguments=dict(action.arguments))
    return None


def _shared(a: ToolCall, b: ToolCall) -> int:
    return len(set(scalars(a.arguments)) & set(scalars(b.arguments)))


def _intended(call: ToolCall | None, pending: Sequence[ToolCall]) -> ToolCall | None:
    """The ground-truth call a mistaken one stood for: the pending one of the same tool, else the
    one sharing the most argument values."""
    if call is None or not pending:
        return None
    same = [c for c in pending if c.name == call.name]
    pool = same or list(pending)
    return max(pool, key=lambda c: _shared(call, c))


def _went_through(steps: Sequence[StepRecord]) -> list[str]:
    return [c.canonical() for s in steps if (c := _call(s)) is not None and not _failed(s)]


def _recovered(steps: Sequence[StepRecord], position: int, task: Task | None) -> bool:
    step, call = steps[position], _call(steps[position])
    later = steps[position + 1 :]
    if task is None:
        name = call.name if call else None
        return _failed(step) and any(
            (c := _call(s)) is not None and c.name == name and not _failed(s) for s in later
        )
    done = set(_went_through(steps[:position]))
    pending = [c for c in task.actions if c.actor == "agent" and c.canonical() not in done]
    intended = _intended(call, pending)
    if intended is None:
        return isinstance(step.action, MalformedAction) or (call is not None and _failed(step))
    return intended.canonical() in _went_through(later)


_UNWARRANTED = "no change is warranted here"


def _cause(steps: Sequence[StepRecord], position: int, label: ActionLabel, task: Task | None) -> Cause:
    """The labeler's failure type, except for a call that is not one of the task's (neither its
    ground truth nor a change the user declines) yet broke a rule or guessed a value: what went
    wrong first is the call itself, its arguments (a ground-truth call of the same tool was due)
    or its tool (another one was)."""
    cause: Cause = label.failure_type if label.failure_type != "none" else "hallucination"  # type: ignore[assignment]
    call = _call(steps[position])
    if task is None or call is None or cause == "wrong_tool" or label.reason == _UNWARRANTED:
        return cause
    if call.canonical() in {c.canonical() for c in [*task.actions, *task.declined_actions]}:
        return cause
    done = set(_went_through(steps[:position]))
    pending = [c for c in task.actions if c.actor == "agent" and c.canonical() not in done]
    intended = _intended(call, pending)
    if intended is None:
        return cause
    return "hallucination" if call.name == intended.name else "wrong_tool"


def _invalid_action(steps: Sequence[StepRecord], task: Task | None) -> tuple[int, Cause, str] | None:
    for position, step in enumerate(steps):
        label = _label(step)
        if label is None or label.label != "invalid" or isinstance(step.action, ReplyAction):
            continue
        if not _recovered(steps, position, task):
            return step.index, _cause(steps, position, label, task), label.reason
    return None


def _stand_in(steps: Sequence[StepRecord], task: Task | None) -> tuple[int, Cause, str] | None:
    """The first call made in place of a ground-truth call that then never went through: made
    while that call was the next one due (a ground-truth call out of order counts: it skipped the
    one due, an authentication say), and either of its tool
    (other arguments: a hallucination the labeler may pass as a read) or followed by no call of
    its tool at all (the wrong tool)."""
    if task is None:
        return None
    truth = [c for c in task.actions if c.actor == "agent"]
    canon = {c.canonical() for c in truth}
    through = _went_through(steps)
    for position, step in enumerate(steps):
        call = _call(step)
        if call is None:
            continue
        done = set(_went_through(steps[:position]))
        due = next((c for c in truth if c.canonical() not in done), None)
        if due is None or due.canonical() in through or due.canonical() == call.canonical():
            continue
        if call.canonical() in canon and call.name == due.name:
            continue
        later = [c.name for s in steps[position:] if (c := _call(s)) is not None]
        if call.name == due.name:
            return (
                step.index,
                "hallucination",
                f"called {call.name} with other arguments than {due.canonical()}",
            )
        if due.name not in later:
            return step.index, "wrong_tool", f"called {call.name} where {due.name} was due, never called"
    return None


def _agent_fault(record: TrialRecord, task: Task | None) -> tuple[int, Cause, str, str] | None:
    """The earliest of the first unrecovered invalid action and the first stand-in call."""
    found = [
        (*hit, rule)
        for hit, rule in (
            (_invalid_action(record.steps, task), "first_unrecovered_invalid_action"),
            (_stand_in(record.steps, task), "stand_in_for_missing_call"),
        )
        if hit is not None
    ]
    return (
        min(found, key=lambda hit: (hit[0], hit[3] == "first_unrecovered_invalid_action")) if found else None
    )


def _evidence(record: TrialRecord, rule: str, steps: list[int], detail: str) -> Evidence:
    diff = record.grade.diff[:_DIFF_SHOWN] if record.grade is not None else []
    return Evidence(rule=rule, steps=steps, diff=diff, detail=detail)


def _attribution(record: TrialRecord, step: int | None, cause: Cause, evidence: Evidence) -> Attribution:
    return Attribution(
        domain=record.domain,
        task=record.task_id,
        trial=record.trial_index,
        step=step,
        party=party_of(cause),
        cause=cause,
        evidence=evidence,
    )


def _category_step(record: TrialRecord, cause: Cause) -> int | None:
    """The step that shows a grade's failure: the unrecovered error, the first write that went
    through, or the agent's last word."""
    steps = record.steps
    if not steps:
        return None
    if cause == "tool_error_unrecovered":
        for position, step in enumerate(steps):
            call = _call(step)
            if _failed(step) and not any(
                (c := _call(s)) is not None and call is not None and c.name == call.name and not _failed(s)
                for s in steps[position + 1 :]
            ):
                return step.index
    if cause == "wrong_state_update":
        domain, _ = context(record.domain, record.task_id)
        for step in steps:
            call = _call(step)
            if (
                call is not None
                and not _failed(step)
                and (domain is None or domain.toolkit.is_write(call.name))
            ):
                return step.index
    replies = [s.index for s in steps if isinstance(s.action, ReplyAction)]
    return replies[-1] if replies else steps[-1].index


def _first(faults: Sequence[UserFault], decisive: bool) -> UserFault | None:
    return next((f for f in faults if f.decisive == decisive), None)


def attribute(record: TrialRecord, task: Task | None = None, *, lookup: bool = True) -> Attribution | None:
    """Why a trial did not pass, and whose fault it was; None for a passed trial. `task` defaults
    to the installed domain's (`lookup=False`: only what the record holds)."""
    if record.passed:
        return None
    if task is None and lookup:
        task = context(record.domain, record.task_id)[1]
    if record.status == "error":
        if record.end_reason in _UNSCORED:
            cause: Cause = _UNSCORED[record.end_reason]  # type: ignore[assignment]
            detail = "the harness or its infrastructure failed"
        else:
            cause, detail = "user_error", "the simulated user failed"
        last = record.steps[-1].index if record.steps else None
        return _attribution(
            record, last, cause, _evidence(record, "unscored", [], (record.error or detail)[:200])
        )
    faults = user_faults(record, task)
    agent = _agent_fault(record, task)
    user = _first(faults, decisive=True)
    if user is not None and (agent is None or (user.step if user.step is not None else -1) < agent[0]):
        steps = [user.step] if user.step is not None else []
        return _attribution(
            record, user.step, user.cause, _evidence(record, "simulator_fault", steps, user.detail)
        )
    if agent is not None:
        step, cause, reason, rule = agent
        return _attribution(record, step, cause, _evidence(record, rule, [step], reason))
    category = record.grade.failure_category if record.grade is not None else None
    weak = _first(faults, decisive=False)
    stalled = category in ("missing_state_change", "did_not_finish") or record.end_reason == "max_steps"
    if weak is not None and stalled:
        steps = [weak.step] if weak.step is not None else []
        return _attribution(
            record, weak.step, weak.cause, _evidence(record, "simulator_fault", steps, weak.detail)
        )
    if record.end_reason in ("agent_error", "timeout", "max_steps"):
        cause = "ran_out_of_steps" if record.end_reason == "max_steps" else record.end_reason  # type: ignore[assignment]
        last = record.steps[-1].index if record.steps else None
        return _attribution(
            record, last, cause, _evidence(record, "end_reason", [], (record.error or "")[:200])
        )
    cause = _CATEGORY.get(category or "", "incomplete_reply")
    step = _category_step(record, cause)
    return _attribution(
        record,
        step,
        cause,
        _evidence(record, "grade_category", [step] if step is not None else [], f"graded {category}"),
    )


def near_miss(record: TrialRecord) -> NearMiss | None:
    """A passed trial with an executed action the labeler found invalid (a policy break, a guessed
    value that happened to be right): it passed without showing the check it skipped."""
    if not record.passed:
        return None
    for step in record.steps:
        label = _label(step)
        if label is not None and label.label == "invalid" and label.failure_type != "none":
            return NearMiss(
                domain=record.domain,
                task=record.task_id,
                trial=record.trial_index,
                step=step.index,
                cause=label.failure_type,
                detail=label.reason,
            )
    return None
