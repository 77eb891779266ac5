"""Reliability figures recomputed from stored trial rewards with the tests' own code.

Nothing here comes from `castbench._records.metrics` or `castbench._results.report`: a task's count
is read off the
trial records (status, reward), pass^k and pass@k come straight from their definitions with
`math.comb`. Tests compare a summary against this, so a bug in the harness's estimator, its
grouping of trials into tasks or its pooling of domains shows as a difference.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from math import comb
from typing import NamedTuple

from castbench._records.trial import TrialRecord

__all__ = ["Figures", "recompute"]


class Figures(NamedTuple):
    counts: dict[str, tuple[int, int]]
    """Task -> (scored trials, successes), for tasks with every configured trial scored."""
    pass_hat: dict[int, float]
    pass_at: dict[int, float]


def recompute(records: Iterable[TrialRecord], trials: int, *, pooled: bool = False) -> Figures:
    """Figures over `records` for a run of `trials` trials per task. `pooled` keys tasks as
    "domain/task id" (the overall figures of a run over several domains)."""
    scored: dict[str, list[float]] = defaultdict(list)
    for record in records:
        if record.status == "scored":
            scored[f"{record.domain}/{record.task_id}" if pooled else record.task_id].append(
                record.reward or 0.0
            )
    counts = {
        task: (len(rewards), sum(reward == 1.0 for reward in rewards))
        for task, rewards in sorted(scored.items())
        if len(rewards) >= trials
    }
    pass_hat = {k: _mean(comb(c, k) / comb(n, k) for n, c in counts.values()) for k in range(1, trials + 1)}
    pass_at = {
        k: _mean(1 - comb(n - c, k) / comb(n, k) for n, c in counts.values()) for k in range(1, trials + 1)
    }
    return Figures(counts, pass_hat, pass_at)


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items)
