"""A run's summary, derived from its stored trial records and nothing else.

This is what `--output summary.json` writes, what the tables show and what a CI gate reads.
pass^k is taken over every task the run planned: a task with fewer scored trials than planned is
estimated from those it has, a task with none counts as failed (and is listed as missing), so
tasks an agent cannot get through never drop out of the denominator. Only infrastructure and
harness errors leave a trial unscored; then the run is `incomplete`, and its headline (the figure
shown first, `headline` in the JSON) is the conservative bound, every unscored planned trial
counted as a failure: an agent cannot raise it by making the trials it fails unscored. The
estimate from scored trials alone (`pass_hat`) is shown after it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from castbench.attribution.shares import AttributionShares, TrialJudgement, attribution_shares
from castbench.conversation import Usage
from castbench.metrics import ReliabilitySummary, TaskOutcome, summarize_counts
from castbench.records.config import RunConfig
from castbench.records.migrations import RecordShape
from castbench.records.provenance import Provenance
from castbench.records.trial import TrialRecord
from castbench.report.critic_report import CriticReport, critic_report, paired_effect
from castbench.report.floors import ReferenceFloors
from castbench.report.outputs import OutputCounts, output_counts
from castbench.report.reply_judge import ReplyJudgeAgreement, reply_judge_agreement
from castbench.runner.journal import is_lost

__all__ = [
    "RUN_SUMMARY",
    "DomainReport",
    "Headline",
    "RunStatus",
    "RunSummary",
    "pair_with_baseline",
    "summarize_run",
]

RunStatus = Literal["complete", "incomplete", "stopped", "failed", "running", "interrupted"]


class DomainReport(ReliabilitySummary):
    incomplete_tasks: list[str] = Field(default_factory=list)
    """Planned tasks with fewer scored trials than planned (in pass^k, estimated from what they have)."""
    missing_tasks: list[str] = Field(default_factory=list)
    """Planned tasks without a single scored trial (in pass^k as failed)."""
    unscored_trials: int = 0
    """Planned trials without a scored record: errored, or never run."""
    pass_hat_conservative: dict[int, float] | None = None
    """pass^k with every unscored planned trial counted as a failure (only when any is unscored):
    the lowest pass^k the completed run could have."""
    errored_trials: int = 0
    """Trials not scored (infrastructure or harness errors after retries)."""
    retried_trials: int = 0
    """Trials that needed more than one attempt because of infrastructure errors."""
    lost_trials: int = 0
    """Trials a castbench process started and never stored (killed, lost): played again on
    resume, each lost try counted as an attempt (`castbench.runner.journal`)."""
    timed_out_trials: int = 0
    """Trials an agent ran past the step or trial time limit (scored 0)."""
    steps_mean: float = 0.0
    usage: dict[str, Usage] = Field(default_factory=dict)
    """Per role, summed over trials."""
    outputs: OutputCounts = Field(default_factory=OutputCounts)
    """Malformed actions, unparseable verdicts, unusable user turns; tokens, calls and model time
    over all roles (`castbench.report.outputs`)."""
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
    attribution: AttributionShares | None = None
    """Whose fault the trials that did not pass were, and why; near-misses among passes; trials
    with a simulator fault (`castbench.attribution`)."""
    reply_judge: ReplyJudgeAgreement | None = Field(None, exclude_if=lambda agreement: agreement is None)
    """With `--reply-judge`: how often the judge agreed with the rules on the reply checks
    (`castbench.report.reply_judge`); absent from rule-graded runs."""


HeadlineBasis = Literal["all_trials_scored", "unscored_as_failures"]


class Headline(BaseModel):
    """A run's first figure, over all its domains: what the console prints first and the one to
    quote. For an incomplete run it is the conservative bound (`unscored_as_failures`), which no
    agent can raise by failing differently (making a trial unscored instead of failing it)."""

    basis: HeadlineBasis
    pass_hat: dict[int, float]


def _headline(overall: DomainReport) -> Headline:
    if overall.pass_hat_conservative is not None:
        return Headline(basis="unscored_as_failures", pass_hat=overall.pass_hat_conservative)
    return Headline(basis="all_trials_scored", pass_hat=overall.pass_hat)


class RunSummary(BaseModel):
    run_id: str
    status: RunStatus = "complete"
    """`complete` only when every planned trial is scored; gates and leaderboards refuse others."""
    headline: Headline | None = None
    """The run's first figure and its basis (filled from `overall` when not given)."""
    config: RunConfig
    domains: dict[str, DomainReport]
    overall: DomainReport
    warnings: list[str] = Field(default_factory=list)
    trait_sweep: Any = None
    """With `--sweep-traits`: each profile's pass^k and its drop against no traits."""
    floors: ReferenceFloors | None = None
    """What refusing scores on the same tasks (`castbench.report.floors`); `castbench eval` adds it."""
    provenance: Provenance | None = None
    """Where the run came from and where each role's agent ran (`castbench.records.provenance`);
    `castbench eval` adds it."""

    @model_validator(mode="after")
    def _headline_from_overall(self) -> RunSummary:
        if self.headline is None:
            self.headline = _headline(self.overall)
        return self

    @property
    def missing(self) -> list[str]:
        """Planned tasks (domain/task) without every planned trial scored."""
        return list(self.overall.incomplete_tasks)

    def incomplete_reason(self) -> str | None:
        """Why this run's figures are not final, naming the tasks; None for a complete run."""
        if self.status == "complete":
            return None
        tasks = self.missing
        listed = ", ".join(tasks[:10]) + (f" and {len(tasks) - 10} more" if len(tasks) > 10 else "")
        what = f"{self.overall.unscored_trials} planned trial(s) unscored" + (
            f" in {len(tasks)} task(s): {listed}" if tasks else ""
        )
        return f"run {self.run_id} is {self.status}: {what}"


def _status_from_tasks(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: summaries written before runs had a status say whether they are complete
    through their incomplete tasks and unscored trials."""
    overall = raw.get("overall")
    if "status" not in raw and isinstance(overall, dict):
        unfinished = overall.get("incomplete_tasks") or overall.get("unscored_trials")
        raw = {**raw, "status": "incomplete" if unfinished else "complete"}
    return raw


RUN_SUMMARY = RecordShape("run summary", (_status_from_tasks,))
"""How a `RunSummary` is kept (`eval --output`, the store's cache): version 2 has a status."""


def _outcomes(
    by_task: dict[str, list[TrialRecord]], tasks: list[str], trials: int
) -> tuple[dict[str, TaskOutcome], dict[str, TaskOutcome]]:
    """Per planned task: the estimate from its scored trials (no scored trial: `trials` failures),
    and the conservative count with every unscored planned trial a failure."""
    estimate: dict[str, TaskOutcome] = {}
    conservative: dict[str, TaskOutcome] = {}
    for task_id in tasks:
        scored = [r for r in by_task.get(task_id, []) if r.status == "scored"]
        successes = sum(r.passed for r in scored)
        estimate[task_id] = TaskOutcome(n=len(scored) or trials, successes=successes)
        conservative[task_id] = TaskOutcome(n=max(trials, len(scored)), successes=successes)
    return estimate, conservative


def _report(
    records: list[TrialRecord],
    planned: list[str] | None,
    trials: int,
    seed: int,
    prefix_domain: bool,
    judged: dict[int, TrialJudgement],
) -> DomainReport | None:
    by_task: dict[str, list[TrialRecord]] = defaultdict(list)
    for record in records:
        key = f"{record.domain}/{record.task_id}" if prefix_domain else record.task_id
        by_task[key].append(record)
    tasks = planned if planned is not None else sorted(by_task)
    if not tasks:
        return None
    estimate, conservative = _outcomes(by_task, tasks, trials)
    scored_counts = {
        task_id: sum(r.status == "scored" for r in by_task.get(task_id, [])) for task_id in tasks
    }
    unscored = sum(max(0, trials - count) for count in scored_counts.values())
    reliability = summarize_counts(estimate, seed=seed)
    strict = _strict(by_task, estimate, seed)
    scored_records = [r for r in records if r.status == "scored"]
    usage: dict[str, Usage] = {}
    for record in records:
        for role, spent in record.usage.items():
            usage[role] = usage.get(role, Usage()) + spent
    costs = [u.cost for u in usage.values() if u.cost is not None]
    failed = [r.grade for r in scored_records if not r.passed and r.grade is not None]
    return DomainReport(
        **reliability.model_dump(),
        incomplete_tasks=sorted(task_id for task_id, count in scored_counts.items() if count < trials),
        missing_tasks=sorted(task_id for task_id, count in scored_counts.items() if count == 0),
        unscored_trials=unscored,
        pass_hat_conservative=summarize_counts(conservative, seed=seed).pass_hat if unscored else None,
        errored_trials=sum(r.status == "error" for r in records),
        retried_trials=sum(r.attempts > 1 for r in records),
        lost_trials=sum(any(is_lost(reason) for reason in r.retried_for) for r in records),
        timed_out_trials=sum(r.end_reason == "timeout" for r in records),
        steps_mean=sum(len(r.steps) for r in scored_records) / max(1, len(scored_records)),
        usage=usage,
        outputs=output_counts(records),
        cost_per_trial=sum(costs) / len(records) if costs else None,
        end_reasons=dict(sorted(Counter(r.end_reason for r in records).items())),
        failure_categories=dict(
            sorted(Counter(grade.failure_category for grade in failed if grade.failure_category).items())
        ),
        surface_success=sum(grade.surface_success for grade in failed),
        critic=critic_report(records),
        strict=strict,
        attribution=attribution_shares(records, judged),
        reply_judge=reply_judge_agreement(records),
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


def _status(run_status: str | None, overall: DomainReport) -> RunStatus:
    """The stored status where it says more than the records (failed, stopped, ...); otherwise
    complete exactly when every planned trial is scored."""
    if run_status in ("failed", "stopped", "running", "interrupted"):
        return run_status  # type: ignore[return-value]
    return "incomplete" if overall.unscored_trials else "complete"


def summarize_run(
    run_id: str,
    config: RunConfig,
    records: Iterable[TrialRecord],
    run_status: str | None = None,
    judged: dict[int, TrialJudgement] | None = None,
) -> RunSummary:
    """`run_status` is the store's status of the run, when known. `judged`: attribution
    judgements already made, by the id of their record (`castbench.report.streamed`: made as
    the trials were stored); the others are made here."""
    records = list(records)
    by_domain: dict[str, list[TrialRecord]] = defaultdict(list)
    for record in records:
        by_domain[record.domain].append(record)
    planned = config.planned_tasks or None
    domains: dict[str, DomainReport] = {}
    warnings: list[str] = []
    judged = {} if judged is None else judged  # each trial judged once, for its domain and the pool
    for name in config.domains:
        tasks = planned.get(name, []) if planned is not None else None
        report = _report(by_domain.get(name, []), tasks, config.trials, config.seed, False, judged)
        if report is None:
            warnings.append(f"{name}: no task planned or stored")
            continue
        domains[name] = report
        if report.unscored_trials:
            warnings.append(
                f"{name}: {report.unscored_trials} planned trial(s) unscored in "
                f"{len(report.incomplete_tasks)} task(s) (in pass^k from their scored trials; "
                f"{len(report.missing_tasks)} with none count as failed): "
                + ", ".join(report.incomplete_tasks[:5])
                + (" ..." if len(report.incomplete_tasks) > 5 else "")
            )
    pooled = [f"{name}/{task_id}" for name, ids in planned.items() for task_id in ids] if planned else None
    overall = _report(records, pooled, config.trials, config.seed, True, judged)
    if overall is None:
        raise ValueError(f"run {run_id}: no task planned or stored to summarise")
    return RunSummary(
        run_id=run_id,
        status=_status(run_status, overall),
        config=config,
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
