"""A run's attribution figures: failures by party and cause, near-misses, simulator faults.

Derived from stored trials like every other figure of a summary. Shares are of the trials that
did not pass (unscored ones included: those are the harness's or the simulated user's), so a
team reads "62% hallucination, 20% the user" instead of a thousand transcripts.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from castbench._records.trial import TrialRecord
from castbench._results.attribution.rules import attribute, context, near_miss
from castbench._results.attribution.user_faults import user_faults

__all__ = ["AttributionShares", "SharesTally", "TrialJudgement", "judge_trial"]


class AttributionShares(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    trials: int
    not_passed: int
    """Trials attributed: failed, or unscored."""
    by_party: dict[str, int] = Field(default_factory=dict)
    by_cause: dict[str, int] = Field(default_factory=dict)
    passed: int = 0
    near_misses: int = 0
    """Passed trials with an executed action the labeler found invalid (a skipped check)."""
    near_miss_causes: dict[str, int] = Field(default_factory=dict)
    simulator_fault_trials: int = 0
    """Trials, passed or not, in which the simulated user did something its scenario does not
    allow (`castbench._results.attribution.user_faults`): the user simulator's fidelity."""

    party_shares: dict[str, float] = Field(default_factory=dict)
    """`by_party` as shares of the trials that did not pass."""
    simulator_fault_share: float | None = None
    near_miss_share: float | None = None
    """Near-misses among passed trials."""


def _ratio(count: int, total: int) -> float | None:
    return count / total if total else None


class TrialJudgement(NamedTuple):
    """What one trial adds to the shares."""

    party: str | None
    cause: str | None
    near_miss: str | None
    simulator_fault: bool


def judge_trial(record: TrialRecord) -> TrialJudgement:
    task = context(record.domain, record.task_id)[1]
    faults = user_faults(record, task) if record.status == "scored" else []
    attribution = attribute(record, task, lookup=False, faults=faults)
    missed = near_miss(record)
    return TrialJudgement(
        party=None if attribution is None else attribution.party,
        cause=None if attribution is None else attribution.cause,
        near_miss=None if missed is None else missed.cause,
        simulator_fault=bool(faults) or (attribution is not None and attribution.party == "user"),
    )


class SharesTally:
    """The attribution shares of a set of trials, one judged record at a time."""

    def __init__(self) -> None:
        self.parties: Counter[str] = Counter()
        self.causes: Counter[str] = Counter()
        self.near: Counter[str] = Counter()
        self.trials = self.passed = self.faulty = 0

    def add(self, record: TrialRecord, judgement: TrialJudgement) -> None:
        self.trials += 1
        self.passed += record.passed
        if judgement.party is not None and judgement.cause is not None:
            self.parties[judgement.party] += 1
            self.causes[judgement.cause] += 1
        if judgement.near_miss is not None:
            self.near[judgement.near_miss] += 1
        self.faulty += judgement.simulator_fault

    def result(self) -> AttributionShares:
        parties, causes, near = self.parties, self.causes, self.near
        not_passed = sum(parties.values())
        return AttributionShares(
            trials=self.trials,
            not_passed=not_passed,
            by_party=dict(sorted(parties.items())),
            by_cause=dict(sorted(causes.items(), key=lambda item: (-item[1], item[0]))),
            passed=self.passed,
            near_misses=sum(near.values()),
            near_miss_causes=dict(sorted(near.items())),
            simulator_fault_trials=self.faulty,
            party_shares={party: count / not_passed for party, count in sorted(parties.items())},
            simulator_fault_share=_ratio(self.faulty, self.trials),
            near_miss_share=_ratio(sum(near.values()), self.passed),
        )
