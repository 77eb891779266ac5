"""Metric names as users type them (`pass^4`, `pass@8`) and their per-task values.

Gates, comparisons and leaderboards all name metrics this way, so one parser decides what a
name means and which per-task vector (the unit a bootstrap resamples) it stands for.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray

from castbench._records.metrics import ReliabilitySummary, pass_at_k_tasks, pass_hat_k_tasks

__all__ = ["Metric", "MetricError", "parse_metric"]

_PATTERN = re.compile(r"^pass(?P<kind>[\^@])(?P<k>[1-9]\d*)$")


class MetricError(ValueError):
    """A metric name that is not `pass^k` or `pass@k`, or a k the run cannot support."""


class Metric(NamedTuple):
    kind: Literal["pass_hat", "pass_at"]
    k: int

    @property
    def name(self) -> str:
        return f"pass{'^' if self.kind == 'pass_hat' else '@'}{self.k}"

    def check(self, summary: ReliabilitySummary, who: str) -> None:
        """Refuse a k larger than the trials every task of `summary` has."""
        if self.k > summary.trials_per_task:
            raise MetricError(
                f"{self.name} needs at least {self.k} trials per task; {who} has {summary.trials_per_task}"
            )

    def per_task(self, summary: ReliabilitySummary, task_ids: list[str]) -> NDArray[np.float64]:
        """This metric's value for each of `task_ids`, in that order."""
        outcomes = [summary.per_task[task_id] for task_id in task_ids]
        estimator = pass_hat_k_tasks if self.kind == "pass_hat" else pass_at_k_tasks
        return estimator([o.n for o in outcomes], [o.successes for o in outcomes], self.k)


def parse_metric(text: str) -> Metric:
    match = _PATTERN.match(text.strip())
    if match is None:
        raise MetricError(f"unknown metric '{text}': use pass^k (all k trials pass) or pass@k (any passes)")
    return Metric("pass_hat" if match["kind"] == "^" else "pass_at", int(match["k"]))
