"""How often a reply judge agreed with the rules (`castbench eval --reply-judge MODEL`).

A judged trial keeps both verdicts of every reply check (`Grade.reply_checks`). Per run (and per
domain) this counts the checks both decided, the confusion table of the rules' pass/fail against
the judge's, plain agreement and Cohen's kappa (agreement beyond what two raters with these pass
rates would reach by chance; undefined when both always say the same one thing), per check kind,
and apart the checks whose judge verdict could not be read (their trials are not scored). It is
printed after the run and stored in its summary (`DomainReport.reply_judge`, in `--output`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, Field

from castbench._grading.replies import ReplyCheck
from castbench._records.trial import TrialRecord

__all__ = ["ReplyJudgeAgreement", "ReplyJudgeTally", "reply_judge_agreement", "reply_judge_lines"]


class ReplyJudgeAgreement(BaseModel):
    checks: int
    """Reply checks both the rules and the judge decided (readable verdicts)."""
    agreed: int
    rule_pass_judge_pass: int
    rule_pass_judge_fail: int
    rule_fail_judge_pass: int
    rule_fail_judge_fail: int
    unreadable: int = 0
    """Checks whose judge verdict could not be read (left out of the figures above)."""
    trials: int = 0
    """Trials with at least one judged check."""
    agreement: float | None
    """`agreed / checks`; None without a check."""
    kappa: float | None
    """Cohen's kappa; None when chance agreement is total (both raters constant) or no check."""
    by_kind: dict[str, list[int]] = Field(default_factory=dict)
    """Check kind -> [agreed, checks]."""


def _kappa(both_pass: int, rule_only: int, judge_only: int, both_fail: int) -> float | None:
    n = both_pass + rule_only + judge_only + both_fail
    if not n:
        return None
    observed = (both_pass + both_fail) / n
    rule_pass, judge_pass = (both_pass + rule_only) / n, (both_pass + judge_only) / n
    chance = rule_pass * judge_pass + (1 - rule_pass) * (1 - judge_pass)
    return None if chance >= 1 else (observed - chance) / (1 - chance)


class ReplyJudgeTally:
    """`reply_judge_agreement`, one record at a time."""

    def __init__(self) -> None:
        self.cells: Counter[tuple[bool, bool]] = Counter()
        self.kinds: dict[str, list[int]] = {}
        self.unreadable = self.trials = 0

    def add(self, record: TrialRecord) -> None:
        checks: list[ReplyCheck] = record.grade.reply_checks if record.grade is not None else []
        self.trials += bool(checks)
        for check in checks:
            if check.judge is None:
                continue
            if check.judge == "unreadable":
                self.unreadable += 1
                continue
            judge_pass = check.judge == "pass"
            self.cells[(check.rule, judge_pass)] += 1
            tally = self.kinds.setdefault(check.kind, [0, 0])
            tally[0] += check.rule == judge_pass
            tally[1] += 1

    def result(self) -> ReplyJudgeAgreement | None:
        if not self.trials:
            return None
        cells = self.cells
        counts = (cells[(True, True)], cells[(True, False)], cells[(False, True)], cells[(False, False)])
        total, agreed = sum(counts), counts[0] + counts[3]
        return ReplyJudgeAgreement(
            checks=total,
            agreed=agreed,
            rule_pass_judge_pass=counts[0],
            rule_pass_judge_fail=counts[1],
            rule_fail_judge_pass=counts[2],
            rule_fail_judge_fail=counts[3],
            unreadable=self.unreadable,
            trials=self.trials,
            agreement=agreed / total if total else None,
            kappa=_kappa(*counts),
            by_kind=dict(sorted(self.kinds.items())),
        )


def reply_judge_agreement(records: Iterable[TrialRecord]) -> ReplyJudgeAgreement | None:
    """The agreement over every judged check of `records` (scored or not: an unreadable verdict
    leaves its trial unscored but is counted); None when no record was judged."""
    tally = ReplyJudgeTally()
    for record in records:
        tally.add(record)
    return tally.result()


def reply_judge_lines(judge: str, agreement: ReplyJudgeAgreement) -> list[str]:
    """Plain lines for the console: who judged, the agreement, the confusion table."""
    share = "n/a" if agreement.agreement is None else f"{agreement.agreement:.1%}"
    kappa = "n/a" if agreement.kappa is None else f"{agreement.kappa:.3f}"
    lines = [
        f"reply judge {judge} (the reward follows it) agreed with the rules on {agreement.agreed} of "
        f"{agreement.checks} reply checks in {agreement.trials} trials ({share}, Cohen's kappa {kappa})"
        + (
            f"; {agreement.unreadable} unreadable verdict(s), their trials unscored"
            if agreement.unreadable
            else ""
        ),
        "               judge pass   judge fail",
        f"  rules pass   {agreement.rule_pass_judge_pass:>10}   {agreement.rule_pass_judge_fail:>10}",
        f"  rules fail   {agreement.rule_fail_judge_pass:>10}   {agreement.rule_fail_judge_fail:>10}",
    ]
    if agreement.by_kind:
        lines.append(
            "  by check: "
            + ", ".join(f"{kind} {agreed}/{n}" for kind, (agreed, n) in agreement.by_kind.items())
        )
    return lines
