"""How big a candidate run must be for the gate to decide: tasks x trials, from the baseline.

The gate decides a check when the paired interval of candidate - baseline clears -d (see
`castbench._results.compare.gate`). For an unchanged agent the per-task difference has mean 0 and a
variance that comes from trial sampling alone (task difficulty cancels in the pairing): for a
task that succeeds with probability p, an estimate from n trials varies by Var_n(p), computed
exactly over the binomial number of successes. So with T tasks the difference's standard error
is se = sqrt(mean_j[Var_n(p_j) + Var_nb(p_j)] / T), n the candidate's trials and nb the
baseline's. The check is decided with probability `power` both for an unchanged agent (PASS)
and for one worse by 2d (FAIL) when

    (z_conf + z_power) * se <= d    and    1/T <= d - z_power * se

(1/T: the interval is never narrower than one task's swing). Each p_j is the baseline's
success share c/n. `bench/gate_rates.py` measures how often the recipe built on these numbers
actually decides.
"""

from __future__ import annotations

from math import ceil, comb, sqrt
from statistics import NormalDist

from pydantic import BaseModel

from castbench._records.metrics import ReliabilitySummary
from castbench._results.compare.gate import Check, GateError, check_report
from castbench._results.compare.metric import Metric, parse_metric
from castbench._results.report.summary import RunSummary

__all__ = ["CheckPlan", "PlanRow", "TRIAL_STEPS", "plan_check", "plan_checks"]

TRIAL_STEPS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)
"""Candidate trials per task the plan considers (those of at least the metric's k)."""


class PlanRow(BaseModel):
    trials: int
    standard_error: float
    """Of candidate - baseline with all the baseline's tasks."""
    tasks_needed: int | None
    """Fewest tasks that decide the check at this many trials (None: more than 100,000)."""

    def decides_with(self, tasks: int) -> bool:
        return self.tasks_needed is not None and self.tasks_needed <= tasks


class CheckPlan(BaseModel):
    check: Check
    baseline_tasks: int
    baseline_trials: int
    power: float
    confidence: float
    rows: list[PlanRow]

    @property
    def recommended(self) -> PlanRow | None:
        """The fewest trials that decide the check on the baseline's tasks."""
        return next((row for row in self.rows if row.decides_with(self.baseline_tasks)), None)


def _estimate(metric: Metric, n: int, c: int) -> float:
    if metric.kind == "pass_hat":
        return comb(c, metric.k) / comb(n, metric.k)
    return 1 - comb(n - c, metric.k) / comb(n, metric.k)


def estimate_variance(metric: Metric, n: int, p: float) -> float:
    """Variance of the per-task estimate of `metric` from n trials that each succeed with p."""
    pmf = [comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)]
    values = [_estimate(metric, n, c) for c in range(n + 1)]
    mean = sum(w * v for w, v in zip(pmf, values, strict=True))
    return max(0.0, sum(w * v * v for w, v in zip(pmf, values, strict=True)) - mean * mean)


def _tasks_needed(variance: float, max_drop: float, z_conf: float, z_power: float) -> int | None:
    first = max(1, ceil(variance * ((z_conf + z_power) / max_drop) ** 2)) if max_drop > 0 else 100_001
    for tasks in range(first, 100_001):
        se = sqrt(variance / tasks)
        if (z_conf + z_power) * se <= max_drop and 1 / tasks <= max_drop - z_power * se:
            return tasks
    return None


def plan_check(
    report: ReliabilitySummary, check: Check, *, power: float = 0.9, confidence: float = 0.95
) -> CheckPlan:
    metric = parse_metric(check.metric)
    metric.check(report, "the baseline")
    outcomes = list(report.per_task.values())
    shares = [o.successes / o.n for o in outcomes]
    baseline_var = sum(estimate_variance(metric, o.n, p) for o, p in zip(outcomes, shares, strict=True))
    baseline_var /= len(outcomes)
    z_conf = NormalDist().inv_cdf(1 - (1 - (check.confidence or confidence)) / 2)
    z_power = NormalDist().inv_cdf(power)
    rows = []
    for trials in (n for n in TRIAL_STEPS if n >= metric.k):
        variance = baseline_var + sum(estimate_variance(metric, trials, p) for p in shares) / len(shares)
        rows.append(
            PlanRow(
                trials=trials,
                standard_error=sqrt(variance / len(outcomes)),
                tasks_needed=_tasks_needed(variance, check.max_drop, z_conf, z_power),
            )
        )
    return CheckPlan(
        check=check,
        baseline_tasks=len(outcomes),
        baseline_trials=report.trials_per_task,
        power=power,
        confidence=check.confidence or confidence,
        rows=rows,
    )


def plan_checks(
    baseline: RunSummary, checks: list[Check], *, power: float = 0.9, confidence: float = 0.95
) -> list[CheckPlan]:
    if not checks:
        raise GateError(
            "nothing to plan: give --metric with --max-drop, or --config gate.toml with [[checks]]"
        )
    if not 0 < power < 1:
        raise GateError(f"power must lie strictly between 0 and 1, got {power}")
    return [
        plan_check(
            check_report(baseline, check.domain, "baseline"), check, power=power, confidence=confidence
        )
        for check in checks
    ]
