"""Critic figures of a set of trials, recomputed from the stored per-proposal records.

Per verified action: the critic's verdict against the labeler's label (confusion matrix).
Per flag, as CAST defines the policy's reactions, split by the label of the flagged action:
- a *false* flag (valid action rejected) answered by a revision: did the policy keep its valid
  action (resistance, the good case)?
- a *true* flag (invalid action rejected) answered by a revision: did it re-propose the invalid
  action (insistence, the bad case)? And was the step's executed action then valid (correction;
  every true flag counts, so one in the last round whose action ran anyway, or a blocked step,
  is not corrected)?
Each figure overall and per round of the flag. Flags on actions the labeler cannot judge
(replies) are in none of them. Per step: a first rejection of a valid action that ended in an
invalid one executed is a harmful revision. Paired with a run of the same policy without the
critic: helpfulness and harmfulness.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from castbench._base.conversation import Usage, canonical_action
from castbench._records.metrics import (
    CriticMetrics,
    CriticRecord,
    correction_rate,
    critic_metrics,
    harmful_revision_rate,
    harmfulness,
    helpfulness,
    insistence_rate,
    resistance_rate,
)
from castbench._records.metrics.critic import FAILURE_TYPES, critic_intervals
from castbench._records.trial import StepRecord, TrialRecord

__all__ = ["CriticReport", "CriticTally", "FlagReactions", "critic_report", "paired_effect"]


class FlagReactions(BaseModel):
    """How the policy reacted to flags (overall, or to the flags of one round)."""

    false_flags_answered: int = 0
    """False flags followed by a revision."""
    kept: int = 0
    true_flags: int = 0
    true_flags_answered: int = 0
    """True flags followed by a revision."""
    insisted: int = 0
    corrected: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def resistance_rate(self) -> float | None:
        return resistance_rate(self.kept, self.false_flags_answered)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def insistence_rate(self) -> float | None:
        return insistence_rate(self.insisted, self.true_flags_answered)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def correction_rate(self) -> float | None:
        return correction_rate(self.corrected, self.true_flags)


class CriticReport(CriticMetrics):
    resistance_rate: float | None
    """Of false flags answered by a revision, the share after which the policy proposed its valid
    action again (same tool, same canonical arguments)."""
    insistence_rate: float | None = None
    """Of true flags answered by a revision, the share after which it re-proposed the invalid action."""
    correction_rate: float | None
    """Of true flags, the share whose step then executed a valid action."""
    reactions: FlagReactions = Field(default_factory=FlagReactions)
    """The counts behind the three rates."""
    reactions_by_round: dict[int, FlagReactions] = Field(default_factory=dict)
    """The same counts per round of the flag (0 = the step's first proposal)."""
    harmful_revision_rate: float | None
    """Of steps whose first rejected proposal was valid, the share that executed an invalid action."""
    rounds_mean: float | None
    """Critic verdicts per verified step."""
    rejections: int
    blocked_steps: int
    """Steps whose last proposal was still rejected and, with `--on-exhausted block`, not run."""
    critic_usage: Usage
    critic_seconds: float
    policy_seconds: float
    helpfulness: float | None = None
    """Paired: trials failed without the critic and passed with it / trials failed without."""
    harmfulness: float | None = None
    """Paired: trials passed without the critic and failed with it / trials passed without."""
    paired_run_id: str | None = None
    pass_hat_without_critic: dict[int, float] | None = None
    """Paired: the same policy's pass^k without the critic (same tasks, seeds, trials)."""
    parse_errors: int = 0
    """Verdicts whose answer could not be read in full (`Verdict.parse_error` set: no verdict,
    counted as `unparseable_verdict`, or an unknown failure type, counted as none). A critic whose
    every answer is unreadable never flags; this count keeps it from passing for a lenient one."""
    unreadable: int = 0
    """Of `parse_errors`, the verdicts with no readable verdict at all: these alone were counted
    as passes (the rest were read in part, and may be flags)."""
    unparseable_verdict: Literal["pass"] = "pass"
    """What an unreadable answer counted as, here and in the run: a pass (the action went ahead,
    as with no critic; `castbench._agents.models.parse`). Its verdicts are in the matrix as passes."""
    mcc_ci: tuple[float, float] | None = None
    """95% bootstrap interval of `mcc`, resampling tasks (None: too few resamples define it)."""
    false_flag_rate_ci: tuple[float, float] | None = None
    detection_rate_ci: tuple[float, float] | None = None


def _executed_label(step: StepRecord) -> str | None:
    if step.action is None:
        return None
    last = step.proposals[-1]
    return last.label.label if last.label is not None else None


def _react(step: StepRecord, overall: FlagReactions, by_round: dict[int, FlagReactions]) -> None:
    """Count the policy's reaction to every flag of `step` whose action has a true label."""
    executed = _executed_label(step)
    following = [*step.proposals[1:], None]
    for current, revision in zip(step.proposals, following, strict=True):
        if current.verdict is None or not current.verdict.flags or current.label is None:
            continue
        same = revision is not None and canonical_action(current.action) == canonical_action(revision.action)
        for counts in (overall, by_round.setdefault(current.round, FlagReactions())):
            if current.label.label == "valid" and revision is not None:
                counts.false_flags_answered += 1
                counts.kept += same
            elif current.label.label == "invalid":
                counts.true_flags += 1
                counts.corrected += executed == "valid"
                if revision is not None:
                    counts.true_flags_answered += 1
                    counts.insisted += same


class CriticTally:
    """`critic_report`, one trial at a time: what it keeps of a trial is one small record per
    verdict (the confusion cells, by task for the intervals) and counts."""

    def __init__(self) -> None:
        self.records: list[CriticRecord] = []
        self.by_task: dict[tuple[str, str], list[CriticRecord]] = {}
        self.parse_errors = self.unreadable = 0
        self.reactions = FlagReactions()
        self.by_round: dict[int, FlagReactions] = {}
        self.valid_rejected = self.harmed = 0
        self.verified_steps = self.verdicts = self.blocked = self.rejections = 0
        self.usage = Usage()
        self.critic_s = self.policy_s = 0.0

    def add(self, trial: TrialRecord) -> None:
        self.usage = self.usage + trial.usage.get("critic", Usage())
        for step in trial.steps:
            self.policy_s += step.timing.policy_s
            self.critic_s += step.timing.critic_s
            judged = [p for p in step.proposals if p.verdict is not None]
            if not judged:
                continue
            self.verified_steps += 1
            self.verdicts += len(judged)
            self.rejections += sum(p.verdict is not None and p.verdict.flags for p in step.proposals[:-1])
            self.blocked += step.action is None
            for proposal in judged:
                assert proposal.verdict is not None
                label = proposal.label
                if proposal.verdict.parse_error is not None:
                    from castbench._agents.models.parse import is_unreadable  # the model clients: only here

                    self.parse_errors += 1
                    self.unreadable += is_unreadable(proposal.verdict)
                record = CriticRecord(
                    "flag" if proposal.verdict.flags else "pass",
                    label.label if label is not None else "unknown",
                    label.failure_type if label is not None and label.failure_type in FAILURE_TYPES else None,
                )
                self.records.append(record)
                self.by_task.setdefault((trial.domain, trial.task_id), []).append(record)
            _react(step, self.reactions, self.by_round)
            first_rejected = next((p for p in judged if p.verdict is not None and p.verdict.flags), None)
            if (
                first_rejected is not None
                and first_rejected.label is not None
                and first_rejected.label.label == "valid"
            ):
                self.valid_rejected += 1
                self.harmed += _executed_label(step) == "invalid"

    def result(self) -> CriticReport | None:
        if not self.records:
            return None
        metrics = critic_metrics(self.records)
        intervals = critic_intervals(list(self.by_task.values()))
        reactions = self.reactions
        return CriticReport(
            **metrics.model_dump(),
            resistance_rate=reactions.resistance_rate,
            insistence_rate=reactions.insistence_rate,
            correction_rate=reactions.correction_rate,
            reactions=reactions,
            reactions_by_round=dict(sorted(self.by_round.items())),
            harmful_revision_rate=harmful_revision_rate(self.harmed, self.valid_rejected),
            rounds_mean=self.verdicts / self.verified_steps if self.verified_steps else None,
            rejections=self.rejections,
            blocked_steps=self.blocked,
            critic_usage=self.usage,
            critic_seconds=self.critic_s,
            policy_seconds=self.policy_s,
            parse_errors=self.parse_errors,
            unreadable=self.unreadable,
            mcc_ci=intervals.mcc,
            false_flag_rate_ci=intervals.false_flag_rate,
            detection_rate_ci=intervals.detection_rate,
        )


def critic_report(trials: Iterable[TrialRecord]) -> CriticReport | None:
    tally = CriticTally()
    for trial in trials:
        tally.add(trial)
    return tally.result()


def paired_effect(
    with_critic: Iterable[TrialRecord], without: Iterable[TrialRecord]
) -> tuple[float | None, float | None]:
    """(helpfulness, harmfulness) over trials scored in both runs, paired by (domain, task, trial)."""
    baseline = {(t.domain, t.task_id, t.trial_index): t.passed for t in without if t.status == "scored"}
    helped = failed_alone = harmed = passed_alone = 0
    for trial in with_critic:
        key = (trial.domain, trial.task_id, trial.trial_index)
        if trial.status != "scored" or key not in baseline:
            continue
        if baseline[key]:
            passed_alone += 1
            harmed += not trial.passed
        else:
            failed_alone += 1
            helped += trial.passed
    return helpfulness(helped, failed_alone), harmfulness(harmed, passed_alone)
