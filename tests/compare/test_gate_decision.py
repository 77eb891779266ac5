"""The gate's decision rule and the paired interval it reads, on hand-made summaries."""

from __future__ import annotations

import pytest

from castbench._records.metrics import TaskOutcome, summarize_counts
from castbench._results.compare.gate import Check, GateError, Verdict, decide, run_gate
from castbench._results.compare.metric import MetricError, parse_metric
from castbench._results.compare.paired import PairedDifference, paired_metric
from castbench._results.compare.undecided import UndecidedPolicy
from castbench._results.report.summary import DomainReport, RunSummary


def _paired(low: float, high: float) -> PairedDifference:
    return PairedDifference(
        metric="pass^4", shared_tasks=100, baseline=0.5, candidate=0.5, difference=(low + high) / 2,
        low=low, high=high, confidence=0.95,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (-0.10, -0.03, Verdict.FAIL),  # even the best case drops more than 0.02
        (-0.02, 0.05, Verdict.PASS),  # the worst case is exactly the allowed drop
        (-0.01, 0.01, Verdict.PASS),
        (-0.05, 0.01, Verdict.UNDECIDED),  # straddles -0.02
        (-0.05, -0.02, Verdict.UNDECIDED),  # upper bound at the threshold is not credibly worse
    ],
)
def test_decision_rule(low: float, high: float, verdict: Verdict) -> None:
    assert decide(_paired(low, high), max_drop=0.02) is verdict


def _summary(run_id: str, successes: list[int], n: int = 2) -> RunSummary:
    per_task = {f"t{i}": TaskOutcome(n=n, successes=c) for i, c in enumerate(successes)}
    report = DomainReport(**summarize_counts(per_task).model_dump())
    config = {"domains": {"toy": "1-0"}, "trials": n, "policy": "p", "critic": "none"}
    return RunSummary(run_id=run_id, config=config, domains={"toy": report}, overall=report)


def test_interval_is_never_narrower_than_one_task() -> None:
    """Three tasks that agree perfectly would give a zero-width bootstrap interval."""
    same = _summary("a", [2, 2, 2])
    paired = paired_metric(same.overall, same.overall, parse_metric("pass^2"))
    assert paired.difference == 0
    assert paired.low == pytest.approx(-1 / 3) and paired.high == pytest.approx(1 / 3)
    result = run_gate(same, same, [Check(metric="pass^2", max_drop=0.02)], 0.95)
    assert result.verdict is Verdict.UNDECIDED
    assert "too small to decide" in result.results[0].reason


def test_floor_stays_within_the_metric_range() -> None:
    paired = paired_metric(
        _summary("a", [2, 2, 2]).overall, _summary("b", [0, 0, 0]).overall, parse_metric("pass^1")
    )
    assert paired.difference == -1 and paired.low == -1 and paired.high == pytest.approx(-2 / 3)


def test_worst_check_decides_and_undecided_maps_to_exit_codes() -> None:
    base = _summary("a", [2] * 40 + [0] * 10)
    worse = _summary("b", [0] * 40 + [0] * 10)
    checks = [Check(metric="pass^1", max_drop=0.05), Check(metric="pass^1", max_drop=1.0)]
    result = run_gate(base, worse, checks, 0.95)
    assert [r.verdict for r in result.results] == [Verdict.FAIL, Verdict.PASS]
    assert result.verdict is Verdict.FAIL and result.exit_code(UndecidedPolicy.PASS) == 1
    tiny = _summary("c", [2, 1, 2])
    undecided = run_gate(tiny, tiny, [Check(metric="pass^1", max_drop=0.02)], 0.95)
    assert {policy: undecided.exit_code(policy) for policy in UndecidedPolicy} == {
        UndecidedPolicy.UNDECIDED: 3,
        UndecidedPolicy.FAIL: 1,
        UndecidedPolicy.PASS: 0,
    }


def test_unusable_checks_are_errors() -> None:
    summary = _summary("a", [2, 1, 0])
    with pytest.raises(GateError, match="no scored domain 'airline'"):
        run_gate(summary, summary, [Check(metric="pass^1", max_drop=0.1, domain="airline")], 0.95)
    with pytest.raises(GateError, match="needs at least 4 trials"):
        run_gate(summary, summary, [Check(metric="pass^4", max_drop=0.1)], 0.95)
    with pytest.raises(GateError, match="nothing to check"):
        run_gate(summary, summary, [], 0.95)
    with pytest.raises(MetricError):
        parse_metric("pass^0")
    with pytest.raises(ValueError, match="unknown metric"):
        Check(metric="accuracy", max_drop=0.1)


def test_metric_names() -> None:
    assert parse_metric(" pass@8 ").name == "pass@8"
    assert parse_metric("pass^4").kind == "pass_hat"
