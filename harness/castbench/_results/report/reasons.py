"""Why a trial did not pass, as lines a person reads: what `runs show` prints under a trial and
what the viewer shows on its page, from one function so the two never say different things (the
viewer left out "not earned" and the policy breaks that `runs show` printed)."""

from __future__ import annotations

from castbench._records.trial import TrialRecord
from castbench._results.attribution import attribute

__all__ = ["trial_reasons"]


def trial_reasons(record: TrialRecord) -> list[str]:
    """The grade's findings beyond the state diff (outputs never said, policy breaks, what was
    not earned), the error that ended the trial, and whose fault it was with the evidence."""
    lines = []
    grade = record.grade
    if grade is not None and grade.missing_outputs:
        lines.append(f"missing outputs: {', '.join(grade.missing_outputs)}")
    for broken in grade.policy_breaks if grade is not None else []:
        lines.append(f"policy broken at step {broken.step} ({broken.tool}): {broken.reason}")
    if grade is not None and grade.unearned:
        lines.append("not earned: " + "; ".join(grade.unearned))
    if record.error:
        lines.append(f"error: {record.error.splitlines()[0]}")
    blame = attribute(record)
    if blame is not None:
        at = "" if blame.step is None else f" at step {blame.step}"
        evidence = f"{blame.evidence.rule}: {blame.evidence.detail}"
        lines.append(f"blamed: {blame.party} · {blame.cause}{at} ({evidence})")
    return lines
