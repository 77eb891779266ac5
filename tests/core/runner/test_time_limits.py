"""Time limits: an agent that overruns its step or trial ends that trial as `timeout`, scored 0
and counted apart; the run goes on."""

from __future__ import annotations

from castbench.report.summary import summarize_run
from castbench.runner.config import RunConfig
from castbench.runner.records import TrialRecord


def _record(task: str, index: int, end: str, reward: float) -> TrialRecord:
    return TrialRecord(
        domain="toy",
        domain_version="1-0",
        task_id=task,
        trial_index=index,
        seed=index,
        status="scored",
        reward=reward,
        end_reason=end,  # type: ignore[arg-type]
        opening="hi",
    )


def test_timed_out_trials_score_zero_and_are_counted_apart() -> None:
    config = RunConfig(domains={"toy": "1-0"}, policy="p", trials=2)
    records = [_record("a", 0, "user_stop", 1.0), _record("a", 1, "timeout", 0.0)]
    report = summarize_run("r-x", config, records).domains["toy"]
    assert report.timed_out_trials == 1 and report.end_reasons["timeout"] == 1
    assert report.pass_hat[1] == 0.5 and report.incomplete_tasks == []
