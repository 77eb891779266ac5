"""candidate - baseline of one metric over the tasks both runs scored, with a paired interval.

The interval is the paired bootstrap over tasks (`castbench._records.metrics.paired_bootstrap_diff`),
widened where needed to at least ±1/(shared tasks): one task going from always passing to
always failing moves the figure by that much, and a bootstrap over a handful of tasks that
happen to agree (3 tasks that passed every trial in both runs) would otherwise report a
zero-width interval, i.e. false certainty. On a full split the floor is far inside the
bootstrap interval and changes nothing.
"""

from __future__ import annotations

from pydantic import BaseModel

from castbench._records.metrics import DEFAULT_RESAMPLES, ReliabilitySummary, paired_bootstrap_diff
from castbench._results.compare.metric import Metric

__all__ = ["PairedDifference", "paired_metric"]


class PairedDifference(BaseModel):
    metric: str
    shared_tasks: int
    baseline: float
    """The baseline's figure over the shared tasks."""
    candidate: float
    difference: float
    low: float
    high: float
    confidence: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def paired_metric(
    baseline: ReliabilitySummary,
    candidate: ReliabilitySummary,
    metric: Metric,
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedDifference:
    shared = sorted(baseline.per_task.keys() & candidate.per_task.keys())
    if not shared:
        raise ValueError("baseline and candidate share no scored task")
    metric.check(baseline, "the baseline")
    metric.check(candidate, "the candidate")
    base = metric.per_task(baseline, shared)
    cand = metric.per_task(candidate, shared)
    point, low, high = paired_bootstrap_diff(base, cand, resamples=resamples, seed=seed, level=confidence)
    floor = 1 / len(shared)
    return PairedDifference(
        metric=metric.name,
        shared_tasks=len(shared),
        baseline=float(base.mean()),
        candidate=float(cand.mean()),
        difference=point,
        low=max(-1.0, min(low, point - floor)),
        high=min(1.0, max(high, point + floor)),
        confidence=confidence,
    )
