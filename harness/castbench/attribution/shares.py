"""A run's attribution figures: failures by party and cause, near-misses, simulator faults.

Derived from stored trials like every other figure of a summary. Shares are of the trials that
did not pass (unscored ones included: those are the harness's or the simulated user's), so a
team reads "62% hallucination, 20% the user" instead of a thousand transcripts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from castbench.attribution.rules import attribute, context, near_miss
from castbench.attribution.user_faults import user_faults
from castbench.records.trial import TrialRecord

__all__ = ["AttributionShares", "attribution_shares"]


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
    allow (`castbench.attribution.user_faults`): the user simulator's fidelity."""

    party_shares: dict[str, float] = Field(default_factory=dict)
    """`by_party` as shares of the trials that did not pass."""
    simulator_fault_share: float | None = None
    near_miss_share: float | None = None
    """Near-misses among passed trials."""


def _ratio(count: int, total: int) -> float | None:
    return count / total if total else None


def attribution_shares(records: Iterable[TrialRecord]) -> AttributionShares:
    parties: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    near: Counter[str] = Counter()
    trials = passed = faulty = 0
    for record in records:
        trials += 1
        passed += record.passed
        task = context(record.domain, record.task_id)[1]
        faults = user_faults(record, task) if record.status == "scored" else []
        attribution = attribute(record, task, lookup=False, faults=faults)
        if attribution is not None:
            parties[attribution.party] += 1
            causes[attribution.cause] += 1
        missed = near_miss(record)
        if missed is not None:
            near[missed.cause] += 1
        faulty += bool(faults) or (attribution is not None and attribution.party == "user")
    not_passed = sum(parties.values())
    return AttributionShares(
        trials=trials,
        not_passed=not_passed,
        by_party=dict(sorted(parties.items())),
        by_cause=dict(sorted(causes.items(), key=lambda item: (-item[1], item[0]))),
        passed=passed,
        near_misses=sum(near.values()),
        near_miss_causes=dict(sorted(near.items())),
        simulator_fault_trials=faulty,
        party_shares={party: count / not_passed for party, count in sorted(parties.items())},
        simulator_fault_share=_ratio(faulty, trials),
        near_miss_share=_ratio(sum(near.values()), passed),
    )
