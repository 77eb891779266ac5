"""The reliability summary of a run: pass^k and pass@k for every k, with bootstrap intervals.

A summary is built from per-task counts alone and keeps them (`per_task`), so any figure in it
can be recomputed from what is stored. Tasks are the unit throughout, as in τ-Bench: a figure is
the mean over tasks of each task's own estimate, and the bootstrap resamples tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from castbench._records.metrics.intervals import (
    DEFAULT_RESAMPLES,
    Difference,
    mean_and_interval,
    paired_bootstrap_diff,
)
from castbench._records.metrics.passk import (
    pass_at_k,
    pass_at_k_tasks,
    pass_hat_k,
    pass_hat_k_tasks,
    reported_ks,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ReliabilitySummary",
    "TaskOutcome",
    "overall",
    "paired_difference",
    "summarize",
    "summarize_counts",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskOutcome(_Frozen):
    """Scored trials of one task and how many of them succeeded."""

    n: int = Field(ge=1)
    successes: int = Field(ge=0)

    @model_validator(mode="after")
    def _successes_within_trials(self) -> TaskOutcome:
        if self.successes > self.n:
            raise ValueError(f"successes={self.successes} exceeds n={self.n} trials")
        return self


class ReliabilitySummary(_Frozen):
    n_tasks: int
    n_trials: int
    trials_per_task: int
    """Trials of every task, or the fewest any task has when they differ; k runs 1..this."""
    uniform_trials: bool
    """False when tasks had different numbers of scored trials (each is estimated with its own n)."""
    pass_hat: dict[int, float]
    pass_at: dict[int, float]
    ci95: dict[int, tuple[float, float]]
    """95% bootstrap interval of `pass_hat[k]`."""
    ci95_at: dict[int, tuple[float, float]]
    """95% bootstrap interval of `pass_at[k]`."""
    per_task: dict[str, TaskOutcome]
    bootstrap_resamples: int
    bootstrap_seed: int


def _is_numpy_bool(value: object) -> bool:
    import numpy as np  # only asked of a value that is not a Python bool

    return isinstance(value, np.bool_)


def _outcome(task_id: str, trials: Sequence[bool]) -> TaskOutcome:
    if not trials:
        raise ValueError(f"task {task_id!r} has no scored trials")
    for index, trial in enumerate(trials):
        if not isinstance(trial, bool) and not _is_numpy_bool(trial):
            raise ValueError(f"task {task_id!r} trial {index}: expected a bool, got {trial!r}")
    return TaskOutcome(n=len(trials), successes=sum(bool(trial) for trial in trials))


def summarize(
    trials: Mapping[str, Sequence[bool]], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> ReliabilitySummary:
    """Summarise per-task trial results (task id -> success of each scored trial)."""
    return summarize_counts(
        {task_id: _outcome(task_id, results) for task_id, results in trials.items()},
        resamples=resamples,
        seed=seed,
    )


def summarize_counts(
    per_task: Mapping[str, TaskOutcome], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> ReliabilitySummary:
    """Summarise per-task counts; tasks are taken in sorted id order, so the result is seed-determined.

    Each task's pass^k and pass@k are exact (integer counts, `castbench._records.metrics.passk`); numpy
    comes in only to resample tasks whose values differ (`mean_and_interval`)."""
    if not per_task:
        raise ValueError("cannot summarise a run with no tasks")
    ids = sorted(per_task)
    counts = [(per_task[task_id].n, per_task[task_id].successes) for task_id in ids]
    k_max = min(n for n, _ in counts)
    pass_hat: dict[int, float] = {}
    pass_at: dict[int, float] = {}
    ci95: dict[int, tuple[float, float]] = {}
    ci95_at: dict[int, tuple[float, float]] = {}
    for k in reported_ks(k_max):
        hat = [pass_hat_k(n, c, k) for n, c in counts]
        at = [pass_at_k(n, c, k) for n, c in counts]
        pass_hat[k], ci95[k] = mean_and_interval(hat, resamples=resamples, seed=seed)
        pass_at[k], ci95_at[k] = mean_and_interval(at, resamples=resamples, seed=seed)
    return ReliabilitySummary(
        n_tasks=len(ids),
        n_trials=sum(n for n, _ in counts),
        trials_per_task=k_max,
        uniform_trials=all(n == k_max for n, _ in counts),
        pass_hat=pass_hat,
        pass_at=pass_at,
        ci95=ci95,
        ci95_at=ci95_at,
        per_task={task_id: per_task[task_id] for task_id in ids},
        bootstrap_resamples=resamples,
        bootstrap_seed=seed,
    )


def overall(
    by_domain: Mapping[str, ReliabilitySummary], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> ReliabilitySummary:
    """One summary over several domains: every task pooled, keyed "domain/task_id".

    Tasks are the unit, as in τ-Bench: a domain with 114 tasks weighs more than one with 18.
    (An average of domain figures would instead give each of the 18 tasks six times the say.)
    """
    pooled = {
        f"{domain}/{task_id}": outcome
        for domain, summary in by_domain.items()
        for task_id, outcome in summary.per_task.items()
    }
    return summarize_counts(pooled, resamples=resamples, seed=seed)


def paired_difference(
    baseline: ReliabilitySummary,
    candidate: ReliabilitySummary,
    k: int,
    *,
    metric: Literal["pass_hat", "pass_at"] = "pass_hat",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Difference:
    """candidate - baseline of pass^k (or pass@k) over the tasks both runs scored, paired by task."""
    shared = sorted(baseline.per_task.keys() & candidate.per_task.keys())
    if not shared:
        raise ValueError("baseline and candidate share no task")
    estimator = pass_hat_k_tasks if metric == "pass_hat" else pass_at_k_tasks

    def values(summary: ReliabilitySummary) -> np.ndarray:
        outcomes = [summary.per_task[task_id] for task_id in shared]
        return estimator([o.n for o in outcomes], [o.successes for o in outcomes], k)

    return paired_bootstrap_diff(values(baseline), values(candidate), resamples=resamples, seed=seed)
