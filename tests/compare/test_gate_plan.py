"""`castbench gate-plan`: how many tasks x trials decide a check, from the baseline's variance."""

from __future__ import annotations

from math import comb

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.metrics import TaskOutcome, summarize_counts
from castbench._results.compare.gate import Check
from castbench._results.compare.metric import parse_metric
from castbench._results.compare.plan import estimate_variance, plan_check
from tests.compare.stored_runs import Runs


@pytest.mark.parametrize(("n", "p"), [(1, 0.3), (8, 0.9), (16, 0.5)])
def test_pass_1_variance_is_the_binomial_one(n: int, p: float) -> None:
    assert estimate_variance(parse_metric("pass^1"), n, p) == pytest.approx(p * (1 - p) / n)


def test_pass_k_variance_by_brute_force() -> None:
    n, k, p = 6, 3, 0.8
    values = {c: comb(c, k) / comb(n, k) for c in range(n + 1)}
    weights = {c: comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)}
    mean = sum(weights[c] * values[c] for c in values)
    expected = sum(weights[c] * (values[c] - mean) ** 2 for c in values)
    assert estimate_variance(parse_metric("pass^3"), n, p) == pytest.approx(expected)


def test_more_trials_need_fewer_tasks() -> None:
    baseline = summarize_counts({f"t{i}": TaskOutcome(n=8, successes=6 + i % 3) for i in range(90)})
    plan = plan_check(baseline, Check(metric="pass^2", max_drop=0.1), power=0.9)
    errors = [row.standard_error for row in plan.rows]
    needed = [row.tasks_needed for row in plan.rows]
    assert errors == sorted(errors, reverse=True) and all(n is not None for n in needed)
    assert needed == sorted(needed, reverse=True)  # type: ignore[type-var]
    best = plan.recommended
    assert best is not None and best.decides_with(90)
    assert all(not row.decides_with(90) for row in plan.rows if row.trials < best.trials)
    tighter = plan_check(baseline, Check(metric="pass^2", max_drop=0.1), power=0.99)
    assert all(a.tasks_needed <= b.tasks_needed for a, b in zip(plan.rows, tighter.rows, strict=True))  # type: ignore[operator]


def test_a_drop_smaller_than_one_task_cannot_be_decided() -> None:
    baseline = summarize_counts({f"t{i}": TaskOutcome(n=8, successes=8) for i in range(20)})
    plan = plan_check(baseline, Check(metric="pass^1", max_drop=0.04))
    assert plan.rows[-1].tasks_needed == 25 and plan.recommended is None  # 1/T <= 0.04 needs 25 tasks


def test_the_command_plans_each_check(runs: Runs) -> None:
    args = ["gate-plan", "--baseline", str(runs.low_noise.path), "--metric", "pass^1", "--metric", "pass^4"]
    result = CliRunner().invoke(
        app, [*args, "--max-drop", "0.03", "--max-drop", "0.08"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "pass^1 · overall: allowed drop 0.030, power 90%" in said and "pass^4 · overall" in said
    assert "trials per task on the baseline's 120 tasks decide it with 90% power" in said
    too_big = CliRunner().invoke(
        app, ["gate-plan", "--baseline", str(runs.tiny_low.path), "--metric", "pass^4", "--max-drop", "0.1"]
    )
    assert too_big.exit_code == 2 and "pass^4 needs at least 4 trials per task" in " ".join(
        too_big.output.split()
    )
