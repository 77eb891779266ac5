"""A run's summary, derived from its stored trial records and nothing else.

This is what `--output summary.json` writes, what the tables show and what a CI gate reads.
Trials that ended in an infrastructure or harness error are not scored; a task with fewer than
the configured trials scored is *incomplete*: excluded from pass^k and reported loudly.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from castbench.agents.conversation import Usage
from castbench.metrics import ReliabilitySummary, TaskOutcome, summarize_counts
from castbench.report.critic_report import CriticReport, critic_report, paired_effect
from castbench.runner.config import RunConfig
from castbench.runner.records import TrialRecord

__all__ = ["DomainReport", "RunSummary", "pair_with_baseline", "summarize_run"]


class DomainReport(ReliabilitySummary):
    incomplete_tasks: list[str] = Field(default_factory=list)
    errored_trials: int = 0
    """Trials not scored (infrastructure or harness errors after retries)."""
    retried_trials: int = 0
    """Trials that needed more than one attempt because of infrastructure errors."""
    timed_out_trials: int = 0
    """Trials an agent ran past the step or trial time limit (scored 0)."""
    steps_mean: float = 0.0
    usage: dict[str, Usage] = Field(default_factory=dict)
    """Per role, summed over trials."""
    cost_per_trial: float | None = None
    end_reasons: dict[str, int] = Field(default_factory=dict)
    failure_categories: dict[str, int] = Field(default_factory=dict)
    surface_success: int = 0
    """Failed trials that looked successful from the chat alone."""
    critic: CriticReport | None = None
    """Present when a critic verified actions in this run."""
    strict: ReliabilitySummary | None = None
    """pass^k when a trial counts only if no executed action broke the domain policy, over the
    same tasks; None when a trial was graded before strict grading existed."""


class RunSummary(BaseModel):
    run_id: str
    config: dict[str, Any]
    domains: dict[str, DomainReport]
    overall: DomainReport
    warnings: list[str] = Field(default_factory=list)
    trait_sweep: Any = None
    """With `--sweep-traits`: each profile's pass^k and its drop against no traits."""


def _report(records: list[TrialRecord], trials: int, seed: int, prefix_domain: bool) -> DomainReport | None:
    by_task: dict[str, list[TrialRecord]] = defaultdict(list)
    for record in records:
        key = f"{record.domain}/{record.task_id}" if prefix_domain else record.task_id
        by_task[key].append(record)
    outcomes: dict[str, TaskOutcome] = {}
    incomplete: list[str] = []
    for task_id, task_records in sorted(by_task.items()):
        scored = [r for r in task_records if r.status == "scored"]
        if len(scored) < trials:
            incomplete.append(task_id)
            continue
        outcomes[task_id] = TaskOutcome(n=len(scored), successes=sum(r.passed for r in scored))
    if not outcomes:
        return None
    reliability = summarize_counts(outcomes, seed=seed)
    strict = _strict(by_task, outcomes, seed)
    scored_records = [r for r in records if r.status == "scored"]
    usage: dict[str, Usage] = {}
    for record in records:
        for role, spent in record.usage.items():
            usage[role] = usage.get(role, Usage()) + spent
    costs = [u.cost for u in usage.values() if u.cost is not None]
    failed = [r.grade for r in scored_records if not r.passed and r.grade is not None]
    return DomainReport(
        **reliability.model_dump(),
        incomplete_tasks=incomplete,
        errored_trials=sum(r.status == "error" for r in records),
        retried_trials=sum(r.attempts > 1 for r in records),
        timed_out_trials=sum(r.end_reason == "timeout" for r in records),
        steps_mean=sum(len(r.steps) for r in scored_records) / max(1, len(scored_records)),
        usage=usage,
        cost_per_trial=sum(costs) / len(records) if costs else None,
        end_reasons=dict(sorted(Counter(r.end_reason for r in records).items())),
        failure_categories=dict(
            sorted(Counter(grade.failure_category for grade in failed if grade.failure_category).items())
        ),
        surface_success=sum(grade.surface_success for grade in failed),
        critic=critic_report(records),
        strict=strict,
    )


def _strict(
    by_task: dict[str, list[TrialRecord]], outcomes: dict[str, TaskOutcome], seed: int
) -> ReliabilitySummary | None:
    """The strict pass^k over the tasks of `outcomes`, or None if any trial lacks a strict grade."""
    strict: dict[str, TaskOutcome] = {}
    for task_id, outcome in outcomes.items():
        verdicts = [r.strict_passed for r in by_task[task_id] if r.status == "scored"]
        if any(verdict is None for verdict in verdicts):
            return None
        strict[task_id] = TaskOutcome(n=outcome.n, successes=sum(bool(v) for v in verdicts))
    return summarize_counts(strict, seed=seed)


def summarize_run(run_id: str, config: RunConfig, records: Iterable[TrialRecord]) -> RunSummary:
    records = list(records)
    by_domain: dict[str, list[TrialRecord]] = defaultdict(list)
    for record in records:
        by_domain[record.domain].append(record)
    domains: dict[str, DomainReport] = {}
    warnings: list[str] = []
    for name in config.domains:
        report = _report(by_domain.get(name, []), config.trials, config.seed, prefix_domain=False)
        if report is None:
            warnings.append(f"{name}: no task has all {config.trials} trials scored yet")
            continue
        domains[name] = report
        if report.incomplete_tasks:
            warnings.append(
                f"{name}: {len(report.incomplete_tasks)} incomplete task(s) excluded from pass^k "
                f"(fewer than {config.trials} scored trials): {', '.join(report.incomplete_tasks[:5])}"
                + (" ..." if len(report.incomplete_tasks) > 5 else "")
            )
    overall = _report(records, config.trials, config.seed, prefix_domain=True)
    if overall is None:
        raise ValueError(f"run {run_id}: no complete task to summarise")
    return RunSummary(
        run_id=run_id,
        config=config.model_dump(mode="json"),
        domains=domains,
        overall=overall,
        warnings=warnings,
    )


def _paired(
    report: DomainReport,
    alone: DomainReport | None,
    with_critic: list[TrialRecord],
    without: list[TrialRecord],
    run_id: str,
) -> DomainReport:
    if report.critic is None or alone is None:
        return report
    helped, harmed = paired_effect(with_critic, without)
    critic = report.critic.model_copy(
        update={
            "helpfulness": helped,
            "harmfulness": harmed,
            "paired_run_id": run_id,
            "pass_hat_without_critic": alone.pass_hat,
        }
    )
    return report.model_copy(update={"critic": critic})


def pair_with_baseline(
    summary: RunSummary, alone: RunSummary, with_critic: list[TrialRecord], without: list[TrialRecord]
) -> RunSummary:
    """Add the critic's trial-level effect against the same run without it (paired by trial)."""
    domains = {
        name: _paired(
            report,
            alone.domains.get(name),
            [r for r in with_critic if r.domain == name],
            [r for r in without if r.domain == name],
            alone.run_id,
        )
        for name, report in summary.domains.items()
    }
    overall = _paired(summary.overall, alone.overall, with_critic, without, alone.run_id)
    return summary.model_copy(update={"domains": domains, "overall": overall})
