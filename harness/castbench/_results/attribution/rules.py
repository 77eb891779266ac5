"""Rule-based attribution of a stored trial: the first decisive step, the party and the cause.

Read from what every trial stores (the labeler's verdict on each executed action, the grade with
its state diff, the end reason, the transcript) and, where the domain is installed, the
privileged task (its ground-truth calls and the user's scenario), as the labeler reads it. It
never reads what a scripted policy meant to do. Decision order for a trial that did not pass:

1. unscored: the simulated user failed (`user_error`), or the harness or infrastructure did
   (`harness_error`, `infra_error`);
2. the earlier of the agent's decisive call (`castbench._results.attribution.calls`: the first call that
   put the trial off course for good) and the first decisive simulator fault
   (`castbench._results.attribution.user_faults`);
3. a non-decisive simulator fault (a leak, a broken persona) when the conversation stopped short
   of the change (`missing_state_change`, unfinished) and the agent did nothing invalid;
4. the agent's last output unusable (`malformed_output`), the agent's own end (`agent_error`,
   `timeout`, `ran_out_of_steps`), else the grade's failure category, at the step that shows it
   (`grade_category`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from castbench._base.conversation import MalformedAction, ReplyAction
from castbench._domain.domain import Domain
from castbench._domain.registry import load_domain
from castbench._domain.task import Task
from castbench._grading.state_diff import kept_initial
from castbench._records.trial import TrialRecord
from castbench._results.attribution.calls import DecisiveCall, decisive_call, executed_call, failed, label_of
from castbench._results.attribution.model import Attribution, Cause, Evidence, NearMiss, UserFault, party_of
from castbench._results.attribution.user_faults import user_faults

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


def _writes(domain: str) -> Callable[[str], bool]:
    """Whether a tool of the domain writes (every tool counts as one where it is not installed)."""
    found = _domain(domain)
    return found.toolkit.is_write if found is not None else (lambda name: True)


def _agent_fault(record: TrialRecord, task: Task | None) -> DecisiveCall | None:
    return decisive_call(record.steps, task, _writes(record.domain))


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
            call = executed_call(step)
            if failed(step) and not any(
                (c := executed_call(s)) is not None
                and call is not None
                and c.name == call.name
                and not failed(s)
                for s in steps[position + 1 :]
            ):
                return step.index
    if cause == "wrong_state_update":
        domain, _ = context(record.domain, record.task_id)
        for step in steps:
            call = executed_call(step)
            if (
                call is not None
                and not failed(step)
                and (domain is None or domain.toolkit.is_write(call.name))
            ):
                return step.index
    replies = [s.index for s in steps if isinstance(s.action, ReplyAction)]
    return replies[-1] if replies else steps[-1].index


def _graded_category(record: TrialRecord) -> str | None:
    """The grade's failure category. A stored `wrong_state_update` whose differing fields all
    keep the task's initial values is a skipped write (graded before the grade told the two
    apart): `missing_state_change`."""
    grade = record.grade
    if grade is None:
        return None
    if grade.failure_category == "wrong_state_update":
        domain, task = context(record.domain, record.task_id)
        if (
            domain is not None
            and task is not None
            and kept_initial(grade.diff, domain.initial_database(task))
        ):
            return "missing_state_change"
    return grade.failure_category


def _first(faults: Sequence[UserFault], decisive: bool) -> UserFault | None:
    return next((f for f in faults if f.decisive == decisive), None)


def attribute(
    record: TrialRecord,
    task: Task | None = None,
    *,
    lookup: bool = True,
    faults: Sequence[UserFault] | None = None,
) -> Attribution | None:
    """Why a trial did not pass, and whose fault it was; None for a passed trial. `task` defaults
    to the installed domain's (`lookup=False`: only what the record holds); `faults`: the trial's
    simulator faults when already found (`user_faults`)."""
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
    if faults is None:
        faults = user_faults(record, task)
    agent = _agent_fault(record, task)
    user = _first(faults, decisive=True)
    if user is not None and (agent is None or (user.step if user.step is not None else -1) < agent.step):
        steps = [user.step] if user.step is not None else []
        return _attribution(
            record, user.step, user.cause, _evidence(record, "simulator_fault", steps, user.detail)
        )
    if agent is not None:
        return _attribution(
            record, agent.step, agent.cause, _evidence(record, agent.rule, [agent.step], agent.detail)
        )
    category = _graded_category(record)
    weak = _first(faults, decisive=False)
    stalled = category in ("missing_state_change", "did_not_finish") or record.end_reason == "max_steps"
    if weak is not None and stalled:
        steps = [weak.step] if weak.step is not None else []
        return _attribution(
            record, weak.step, weak.cause, _evidence(record, "simulator_fault", steps, weak.detail)
        )
    final = record.steps[-1] if record.steps else None
    if final is not None and isinstance(final.action, MalformedAction):
        rule = _evidence(record, "ended_on_unusable_output", [final.index], final.action.reason)
        return _attribution(record, final.index, "malformed_output", rule)
    if record.end_reason in ("agent_error", "timeout", "max_steps"):
        cause = "ran_out_of_steps" if record.end_reason == "max_steps" else record.end_reason  # type: ignore[assignment]
        last = record.steps[-1].index if record.steps else None
        detail = record.error or _unfinished(record)
        return _attribution(record, last, cause, _evidence(record, "end_reason", [], detail[:200]))
    cause = _CATEGORY.get(category or "", "incomplete_reply")
    step = _category_step(record, cause)
    steps = [step] if step is not None else []
    evidence = _evidence(record, "grade_category", steps, _graded(record, step))
    return _attribution(record, step, cause, evidence)


def _unfinished(record: TrialRecord) -> str:
    """Why a trial that stopped without an error stopped, in words."""
    what = f"the trial ended ({record.end_reason}) after {len(record.steps)} agent action(s)"
    if record.end_reason == "max_steps":
        what = f"the conversation was still open after {len(record.steps)} agent action(s), the step limit"
    diff = _missing(record)
    return f"{what}; {diff}" if diff else what


def _missing(record: TrialRecord) -> str:
    """The first differences of the final state from the expected one, field by field."""
    grade = record.grade
    if grade is None or not grade.diff:
        return ""
    shown = "; ".join(
        f"{d.table} {d.key}: {d.field} is {_value(d.got)}, expected {_value(d.expected)}"
        for d in grade.diff[:2]
    )
    more = f" (and {len(grade.diff) - 2} more)" if len(grade.diff) > 2 else ""
    return f"state: {shown}{more}"


def _value(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _graded(record: TrialRecord, step: int | None) -> str:
    """The grade's finding in words a reader can check: the missing or wrong change (table, key,
    field, value), the output not said, what was not earned, and the step it shows at."""
    grade = record.grade
    parts = []
    if grade is not None:
        if grade.diff:
            parts.append(_missing(record))
        if grade.missing_outputs:
            parts.append("never told the user: " + ", ".join(grade.missing_outputs[:3]))
        if grade.unearned:
            parts.append("not earned: " + "; ".join(grade.unearned[:2]))
        if grade.failed_checks:
            parts.append("failed checks: " + "; ".join(grade.failed_checks[:2]))
    category = (grade.failure_category if grade is not None else None) or "no category"
    found = "; ".join(parts) or f"graded {category}"
    where = "" if step is None else f" (shown at step {step})"
    return f"{found}{where}"


def near_miss(record: TrialRecord) -> NearMiss | None:
    """A passed trial with an executed action that went through though the labeler found it broke
    the domain policy (no authentication, no explicit yes: a required check skipped) or used a
    value nothing had revealed (a guess that happened to be right). A mistaken call that failed
    and was put right is not one: the agent recovered, it skipped nothing."""
    if not record.passed:
        return None
    for step in record.steps:
        label = label_of(step)
        if (
            label is not None
            and label.label == "invalid"
            and label.failure_type in ("domain_violation", "hallucination")
            and executed_call(step) is not None
            and not failed(step)
        ):
            return NearMiss(
                domain=record.domain,
                task=record.task_id,
                trial=record.trial_index,
                step=step.index,
                cause=label.failure_type,
                detail=label.reason,
            )
    return None
