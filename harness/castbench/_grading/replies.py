"""The reply checks of a trial, one by one, so that a model judge can decide them instead of the rules.

The rules decide what the agent told the user with token matching (`castbench._grading.outputs`)
and statements tied to records (`castbench._grading.ties`, `castbench._grading.earned`). A judge
(`--reply-judge MODEL`, as τ² judges its natural-language assertions) reads the same material and
decides the same checks, so the two can be compared check by check:

- `required_output`: the replies tell the user a required output;
- `reason`: the replies give the reason the task requires (a refusal's blocking fact);
- `offer`: the replies put the declined change to the user as a question;
- `false_claim`: the replies do not state a false claim of the task (passes when none is made);
- `rival`: a look-up answer is given as the answer, not only among other candidates;
- `confirmation`: before a write (strict grading), the user's latest message explicitly said yes
  to the agent's latest description of this change. The labeler asks it of each proposed write
  (`castbench._grading.labeler.ConfirmationJudge`), so its label and the strict reward follow
  the judge; the judge then sees the dialogue since the last write and the call.

A judge sees only what the rule would judge: the check (which may hold expected values: it is a
grader), the agent's replies to the user and the tool results the agent saw. It runs after the
trial has ended, and what it says goes into the grade alone: no policy or critic ever reads it.

This module holds no model client (the grading layer sits below castbench's models): the judge
is any `ReplyJudge`; castbench's model judge is `castbench._agents.models.reply_judge`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from castbench._base.conversation import (
    AgentTurn,
    Event,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._domain.task import Task
from castbench._grading.earned import EarnedCheck, seen_records

__all__ = [
    "JudgeVerdict",
    "ReplyCheck",
    "ReplyCheckKind",
    "ReplyJudge",
    "StoredVerdicts",
    "confirmation_check",
    "judged_outcome",
    "reply_checks",
    "seen_records",
]

ReplyCheckKind = Literal["required_output", "reason", "offer", "false_claim", "rival", "confirmation"]
JudgeVerdict = Literal["pass", "fail", "unreadable"]
"""`unreadable`: the judge's answer did not say pass or fail for the check in the strict format
after its bounded re-asks: the judge's failure (infrastructure), never the agent's."""


class ReplyCheck(BaseModel):
    """One check on the agent's replies: the rules' verdict and, once judged, the judge's."""

    kind: ReplyCheckKind
    subject: str
    """The output, the reason's first wording, the claim's first wording, the rival answer; for
    an offer, its mentions joined."""
    wordings: list[str] = []
    """Other wordings the task accepts for it (a reason's, a claim's), or for a rival the other
    candidates, or for an offer each mention."""
    rule: bool
    """The rules' verdict: True when the check passes."""
    judge: JudgeVerdict | None = None
    judge_reason: str = ""
    step: int | None = Field(None, exclude_if=lambda step: step is None)
    """A confirmation's step and proposal round (the write it was asked of)."""
    round: int | None = Field(None, exclude_if=lambda round: round is None)
    context: str = Field("", exclude_if=lambda context: not context)
    """A confirmation's dialogue since the last write that went through, as the judge read it."""

    def assertion(self) -> str:
        """The check as one assertion for a judge: true means the check passes."""
        also = f" (the task accepts any of: {', '.join(map(repr, self.wordings))})" if self.wordings else ""
        if self.kind == "required_output":
            return (
                f"The agent's replies tell the user {self.subject!r} (written in any format: "
                "'$1,234.50' is 1234.50, '4:55 PM' is 16:55), as a statement, not denied."
            )
        if self.kind == "reason":
            return f"The agent's replies give the user this reason, in any wording: {self.subject!r}{also}."
        if self.kind == "offer":
            return (
                "The agent asked the user, as a question, whether to make this specific change, "
                f"naming {', '.join(map(repr, self.wordings or [self.subject]))}."
            )
        if self.kind == "confirmation":
            return (
                f"Before this change was made, {self.subject}, the customer's latest message explicitly "
                "said yes to the agent's latest description of it, which named the record it changes and "
                "each value of its arguments (an id may be said as the tool results describe what it "
                "names: an item by its name and options, a payment method by its kind and last digits, a "
                "date in words; the details may sit in the message before a 'Shall I proceed?'). A yes "
                "given before the change was described, or to a different change, confirms nothing. "
                f"The dialogue since the previous change:\n{self.context or '(nothing)'}"
            )
        if self.kind == "false_claim":
            return (
                f"The agent's replies never assert {self.subject!r}{also} about a record it does not hold "
                "true of, as the tool results show (true statements about other records are fine; "
                "a bare list of candidate values with nothing tying each to its record asserts them all)."
            )
        return (
            f"The agent gives {self.subject!r} as the answer for the record asked about, not only as "
            f"one of several candidate values ({', '.join(map(repr, self.wordings))}) "
            "with nothing tying each to its own record."
        )

    @property
    def decided(self) -> bool:
        """The verdict the grade follows: the judge's when judged, else the rules'."""
        return self.rule if self.judge is None else self.judge == "pass"


class ReplyJudge(Protocol):
    """Decides reply checks: the same checks back, each with `judge` (and `judge_reason`) set.
    `replies` are the agent's replies to the user, `records` the tool results it saw."""

    def __call__(
        self, checks: Sequence[ReplyCheck], replies: Sequence[str], records: Sequence[str]
    ) -> list[ReplyCheck]: ...


class StoredVerdicts:
    """A judged trial's stored verdicts as its judge: how a verifier re-grades a judged run without
    calling its model (`castbench._trial.replay`). A check the trial did not store (the task or
    its rules changed since) is `unreadable`, so the re-grade cannot pass it silently."""

    def __init__(self, stored: Sequence[ReplyCheck]) -> None:
        self._stored: dict[tuple[ReplyCheckKind, str], ReplyCheck] = {
            (check.kind, check.subject): check for check in stored if check.kind != "confirmation"
        }
        self.confirmations = {
            (check.step, check.round): check for check in stored if check.kind == "confirmation"
        }
        """A proposed write's confirmation check, by (step, round)."""

    def __call__(
        self, checks: Sequence[ReplyCheck], replies: Sequence[str], records: Sequence[str]
    ) -> list[ReplyCheck]:
        judged = []
        for check in checks:
            kept = self._stored.get((check.kind, check.subject))
            verdict = (kept.judge, kept.judge_reason) if kept is not None and kept.judge is not None else None
            judge, reason = verdict or ("unreadable", "no stored judge verdict for this check")
            judged.append(check.model_copy(update={"judge": judge, "judge_reason": reason}))
        return judged


_CLIP = 600


def _dialogue(events: Sequence[Event]) -> str:
    lines = []
    for event in events:
        if isinstance(event, UserTurn):
            lines.append(f"customer: {event.text[:_CLIP]}")
        elif isinstance(event, AgentTurn) and isinstance(event.action, ReplyAction):
            lines.append(f"agent: {event.action.text[:_CLIP]}")
        elif isinstance(event, AgentTurn) and isinstance(event.action, ToolCallAction):
            lines.append(f"agent calls {event.action.name}({str(event.action.arguments)[:_CLIP]})")
        elif isinstance(event, ToolResultTurn):
            lines.append(f"tool result: {('ERROR ' if event.error else '') + event.content[:_CLIP]}")
    return "\n".join(lines)


def confirmation_check(
    call: str, confirmed: bool, since_last_write: Sequence[Event], step: int, round: int
) -> ReplyCheck:
    """The check of a write's explicit yes: `call` in canonical form, the rule's verdict, and the
    dialogue since the last write that went through (what the rule read)."""
    return ReplyCheck(
        kind="confirmation",
        subject=call,
        rule=confirmed,
        step=step,
        round=round,
        context=_dialogue(since_last_write),
    )


def reply_checks(task: Task, missing: Sequence[str], earned: EarnedCheck | None) -> list[ReplyCheck]:
    """Every reply check of `task` with the rules' verdict: `missing` the required outputs the
    rule did not find, `earned` the earned-outcome check (None when the task has none or the
    grading mode leaves it out)."""
    checks = [
        ReplyCheck(kind="required_output", subject=output, rule=output not in missing)
        for output in task.required_outputs
    ]
    spec = task.earned
    if spec is None or earned is None:
        return checks
    checks += [
        ReplyCheck(
            kind="reason",
            subject=reason.any_of[0],
            wordings=reason.any_of[1:],
            rule=reason.any_of[0] not in earned.missing_reasons,
        )
        for reason in spec.reasons
    ]
    if spec.offer:
        mentions = [mention.any_of[0] for mention in spec.offer]
        checks.append(
            ReplyCheck(
                kind="offer", subject=", ".join(mentions), wordings=mentions, rule=not earned.missing_offer
            )
        )
    checks += [
        ReplyCheck(
            kind="false_claim",
            subject=claim.any_of[0],
            wordings=claim.any_of[1:],
            rule=not set(claim.any_of) & set(earned.false_claims),
        )
        for claim in spec.false_claims
    ]
    checks += [
        ReplyCheck(
            kind="rival",
            subject=rival.output,
            wordings=rival.others,
            rule=rival.output not in earned.amid_rivals,
        )
        for rival in spec.rivals
    ]
    return checks


def judged_outcome(
    checks: Sequence[ReplyCheck], earned: EarnedCheck | None
) -> tuple[list[str], EarnedCheck | None]:
    """The missing outputs and the earned check as the judged `checks` decide them (the look-ups,
    tool calls and not replies, stay the rules'); an unreadable verdict counts as a fail here, and
    the trial holding one is not scored (`Grade.judge_unreadable`)."""
    failed = [check for check in checks if not check.decided]
    missing = [check.subject for check in failed if check.kind == "required_output"]
    if earned is None:
        return missing, None
    offer = next((check for check in failed if check.kind == "offer"), None)
    return missing, EarnedCheck(
        missing_lookups=earned.missing_lookups,
        missing_reasons=[check.subject for check in failed if check.kind == "reason"],
        missing_offer=list(offer.wordings) if offer is not None else [],
        false_claims=[check.subject for check in failed if check.kind == "false_claim"],
        amid_rivals=[check.subject for check in failed if check.kind == "rival"],
    )
