"""pass^k is reported for a bounded set of k (every k to 16, then powers of two and the largest):
a run with very many trials per task no longer keeps `runs show` or `compare` computing pass^k
and its interval for every k."""

from __future__ import annotations

from castbench._records.metrics.passk import reported_ks
from castbench._records.metrics.summary import TaskOutcome, summarize_counts


def test_the_reported_ks_are_bounded_and_keep_the_ends() -> None:
    assert reported_ks(8) == list(range(1, 9))
    assert reported_ks(16) == list(range(1, 17))
    assert reported_ks(100) == [*range(1, 17), 32, 64, 100]
    assert reported_ks(1024) == [*range(1, 17), 32, 64, 128, 256, 512, 1024]
    assert len(reported_ks(10**9)) < 50


def test_a_summary_of_many_trials_per_task_reports_the_bounded_set() -> None:
    summary = summarize_counts({f"t{i}": TaskOutcome(n=1000, successes=1000 - i) for i in range(5)})
    assert sorted(summary.pass_hat) == sorted(summary.ci95) == reported_ks(1000)
    assert summary.pass_hat[1000] == 0.2 and summary.trials_per_task == 1000
