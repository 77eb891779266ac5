"""Reliability metrics: pass^k / pass@k with bootstrap intervals, and critic confusion metrics."""

from castbench.metrics.critic import (
    FAILURE_TYPES,
    ConfusionCounts,
    ConfusionShares,
    CriticMetrics,
    CriticRecord,
    FailureType,
    correction_rate,
    critic_metrics,
    harmful_revision_rate,
    harmfulness,
    helpfulness,
    rate,
    resistance_rate,
)
from castbench.metrics.intervals import (
    DEFAULT_RESAMPLES,
    Difference,
    Interval,
    bootstrap_ci,
    paired_bootstrap_diff,
)
from castbench.metrics.passk import pass_at_k, pass_at_k_tasks, pass_hat_k, pass_hat_k_tasks
from castbench.metrics.summary import (
    ReliabilitySummary,
    TaskOutcome,
    overall,
    paired_difference,
    summarize,
    summarize_counts,
)

__all__ = [
    "DEFAULT_RESAMPLES",
    "FAILURE_TYPES",
    "ConfusionCounts",
    "ConfusionShares",
    "CriticMetrics",
    "CriticRecord",
    "Difference",
    "FailureType",
    "Interval",
    "ReliabilitySummary",
    "TaskOutcome",
    "bootstrap_ci",
    "correction_rate",
    "critic_metrics",
    "harmful_revision_rate",
    "harmfulness",
    "helpfulness",
    "overall",
    "paired_bootstrap_diff",
    "paired_difference",
    "pass_at_k",
    "pass_at_k_tasks",
    "pass_hat_k",
    "pass_hat_k_tasks",
    "rate",
    "resistance_rate",
    "summarize",
    "summarize_counts",
]
