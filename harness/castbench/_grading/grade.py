"""Grading a finished trial: final state against the expected state, plus required outputs.

Reward is 1 iff the final state equals the expected state field by field (free text normalised
where the task says so) and every required output appears in the agent's replies (by the run's
matching rule, see `castbench._grading.outputs`). The *strict* reward also needs that no executed
action broke the domain policy (acting before authenticating the user, writing without an
explicit yes, a change the policy forbids), as the privileged labeler judged each one: τ-Bench
passes a trial that cancels the right order without asking, the strict reward does not. For a
task whose right answer leaves the state alone, the refusal or "no change" must also have been
earned (`castbench._grading.earned`).

The grade keeps the diff, so a failure explains itself, and the surface signals that would have
made the trial look successful to someone reading the chat (ThinkingBox's observation).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from castbench._base.conversation import Event
from castbench._domain.database import Database
from castbench._domain.domain import TaskChecks
from castbench._domain.task import Task
from castbench._grading.earned import check_earned
from castbench._grading.outputs import GradingMode, claims_success, missing_outputs
from castbench._grading.replies import ReplyCheck, ReplyJudge, judged_outcome, reply_checks, seen_records
from castbench._grading.state_diff import FieldDiff, kept_initial, state_diff

__all__ = ["FailureCategory", "Grade", "PolicyBreak", "SurfaceSignals", "grade_trial"]

FailureCategory = Literal[
    "tool_error_unrecovered",
    "missing_state_change",
    "incomplete_reply",
    "wrong_state_update",
    "did_not_finish",
    "unearned_outcome",
]


class SurfaceSignals(BaseModel):
    ended_cleanly: bool
    """The user or the agent ended the conversation (not a limit, not a crash)."""
    made_write: bool
    """At least one state-changing call succeeded."""
    saw_tool_error: bool
    claimed_success: bool
    """The agent's last replies say the work was done."""


class PolicyBreak(BaseModel):
    """An executed action that broke the domain policy (the labeler's domain violation)."""

    step: int
    tool: str
    reason: str


class Grade(BaseModel):
    reward: float
    state_ok: bool
    outputs_ok: bool
    diff: list[FieldDiff]
    missing_outputs: list[str]
    earned_ok: bool = True
    """False when a refusal or "no change" came without the look-ups, reasons or offer that earn
    it (stored grades from before the check read as earned)."""
    unearned: list[str] = []
    """What it lacked, one line each (`EarnedCheck.problems`)."""
    surface: SurfaceSignals
    surface_success: bool
    """Failed on the state, yet looked successful: the agent claimed success, or it ended cleanly
    after a write with no tool error."""
    failure_category: FailureCategory | None
    policy_breaks: list[PolicyBreak] = Field(default_factory=list)
    strict_reward: float | None = None
    """`reward`, and 0 when any executed action broke the policy; None on trials graded before
    strict grading existed."""
    failed_checks: list[str] = Field(default_factory=list, exclude_if=lambda failed: not failed)
    """The pack's own checks the trial failed (`Domain.task_checks`: τ²'s env assertions, say)."""
    reply_checks: list[ReplyCheck] = Field(default_factory=list, exclude_if=lambda checks: not checks)
    """With a reply judge (`--reply-judge`): every reply check, the rules' verdict and the judge's,
    which the reward follows (`castbench._grading.replies`). Empty on rule-graded trials."""

    @property
    def judge_unreadable(self) -> list[ReplyCheck]:
        """The checks whose judge verdict could not be read: the trial is not scored."""
        return [check for check in self.reply_checks if check.judge == "unreadable"]


def _changed(db: Database) -> bool:
    """Did anything really change (a write of the same value is no change)?"""
    return bool(state_diff(db, Database(db.pristine, db.now)))


_EXPECTS_CHANGE: weakref.WeakKeyDictionary[Database, bool] = weakref.WeakKeyDictionary()


def _expects_change(expected: Database) -> bool:
    """`_changed` of an expected state, worked out once: every trial of a task is graded against
    the one expected state the run replayed for it, which nothing writes."""
    known = _EXPECTS_CHANGE.get(expected)
    if known is None:
        known = _EXPECTS_CHANGE[expected] = _changed(expected)
    return known


def _category(
    final: Database,
    expected: Database,
    diff: list[FieldDiff],
    state_ok: bool,
    outputs_ok: bool,
    earned_ok: bool,
    finished: bool,
    saw_tool_error: bool,
) -> FailureCategory:
    if state_ok and outputs_ok and earned_ok and not finished:
        return "did_not_finish"
    if state_ok and outputs_ok:
        return "unearned_outcome"
    if state_ok:
        return "incomplete_reply"
    if _expects_change(expected) and (
        not _changed(final) or kept_initial(diff, Database(final.pristine, final.now))
    ):
        return "missing_state_change"  # nothing changed, or what differs was never touched
    if saw_tool_error:
        return "tool_error_unrecovered"
    return "wrong_state_update"


def grade_trial(
    task: Task,
    final: Database,
    expected: Database,
    replies: list[str],
    *,
    ended_cleanly: bool,
    made_write: bool,
    saw_tool_error: bool,
    finished: bool = True,
    mode: GradingMode = "castbench",
    policy_breaks: Sequence[PolicyBreak] | None = (),
    conversation: Sequence[Event] = (),
    checks: TaskChecks | None = None,
    judge: ReplyJudge | None = None,
    confirmations: Sequence[ReplyCheck] = (),
) -> Grade:
    """`finished` is False when the agent crashed or ran out of steps: such a trial fails even if
    the state happens to be right (doing nothing is right for a refusal task). `mode` picks the
    rule for required outputs; `policy_breaks` are the executed actions the labeler found to break
    the domain policy (None: the trial was not labelled, so it has no strict reward);
    `conversation` is the trial's events, which the earned-outcome check reads when the task has
    an `earned` spec (in `tau` mode only when the task itself carries it: one castbench derived
    for a τ pack is left out there, so that mode is τ-Bench's reward whole). `checks` are the
    pack's own (`Domain.task_checks`): a failed one fails the trial as a wrong state would, and a
    pack that grades the state by them alone waives the state comparison. `judge`: a reply judge
    that decides the reply checks instead of the rules (`castbench._grading.replies`); the rules'
    verdicts are kept beside its own in `Grade.reply_checks`, with `confirmations`, the checks
    of the explicit yes it already decided for the labeler (which the policy breaks follow)."""
    checks = checks or TaskChecks()
    diff = state_diff(final, expected, task.grading)
    missing = missing_outputs(task.required_outputs, replies, mode)
    spec = task.earned
    earned = None if spec is None or (spec.derived and mode == "tau") else check_earned(spec, conversation)
    judged: list[ReplyCheck] = []
    if judge is not None:
        judged = reply_checks(task, missing, earned)
        if judged:
            judged = judge(judged, replies, seen_records(conversation))
        missing, earned = judged_outcome(judged, earned)
        judged = [*judged, *confirmations]
    state_ok = (not diff or not checks.state_graded) and not checks.failed
    outputs_ok = not missing
    earned_ok = earned is None or earned.ok
    passed = state_ok and outputs_ok and earned_ok and finished
    surface = SurfaceSignals(
        ended_cleanly=ended_cleanly,
        made_write=made_write,
        saw_tool_error=saw_tool_error,
        claimed_success=claims_success(replies),
    )
    looks_fine = surface.claimed_success or (ended_cleanly and made_write and not saw_tool_error)
    return Grade(
        reward=1.0 if passed else 0.0,
        state_ok=state_ok,
        outputs_ok=outputs_ok,
        diff=diff,
        missing_outputs=missing,
        earned_ok=earned_ok,
        unearned=earned.problems() if earned is not None else [],
        surface=surface,
        surface_success=not passed and looks_fine,
        failure_category=None
        if passed
        else _category(final, expected, diff, state_ok, outputs_ok, earned_ok, finished, saw_tool_error),
        policy_breaks=list(policy_breaks or ()),
        strict_reward=None if policy_breaks is None else 1.0 if passed and not policy_breaks else 0.0,
        failed_checks=list(checks.failed),
        reply_checks=judged,
    )
