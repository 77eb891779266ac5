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

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from castbench._base.conversation import Usage
from castbench._records.config import RunConfig
from castbench._records.journal import is_lost
from castbench._records.metrics import ReliabilitySummary, TaskOutcome, summarize_counts
from castbench._records.migrations import RecordShape
from castbench._records.provenance import Provenance
from castbench._records.trial import TrialRecord
from castbench._results.attribution.shares import AttributionShares, SharesTally, TrialJudgement, judge_trial
from castbench._results.report.critic_report import CriticReport, CriticTally, paired_effect
from castbench._results.report.outputs import OutputCounts, OutputTally
from castbench._results.report.reply_judge import ReplyJudgeAgreement, ReplyJudgeTally

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


FLOOR_POLICIES = {
    "refuse": "scripted:refuse",
    "lookup-refuse": "scripted:lookup-refuse",
    "lookup-spray": "scripted:lookup-spray",
}
"""Floor name -> the policy that sets it."""


class ReferenceFloors(BaseModel):
    """pass^k (k = 1..trials) of each floor policy, per domain and over all the run's tasks."""

    policies: dict[str, str] = dict(FLOOR_POLICIES)
    domains: dict[str, dict[str, dict[int, float]]]
    """domain -> floor name -> k -> pass^k."""
    overall: dict[str, dict[int, float]]


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
    resume, each lost try counted as an attempt (`castbench._records.journal`)."""
    timed_out_trials: int = 0
    """Trials an agent ran past the step or trial time limit (scored 0)."""
    steps_mean: float = 0.0
    usage: dict[str, Usage] = Field(default_factory=dict)
    """Per role, summed over trials."""
    outputs: OutputCounts = Field(default_factory=OutputCounts)
    """Malformed actions, unparseable verdicts, unusable user turns; tokens, calls and model time
    over all roles (`castbench._results.report.outputs`)."""
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
    with a simulator fault (`castbench._results.attribution`)."""
    reply_judge: ReplyJudgeAgreement | None = Field(None, exclude_if=lambda agreement: agreement is None)
    """With `--reply-judge`: how often the judge agreed with the rules on the reply checks
    (`castbench._results.report.reply_judge`); absent from rule-graded runs."""


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
    """What refusing scores on the same tasks (`castbench._run.floors`); `castbench eval` adds it."""
    provenance: Provenance | None = None
    """Where the run came from and where each role's agent ran (`castbench._records.provenance`);
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


class _TaskCounts:
    """What a summary keeps of one task's trials: how many were scored and passed, and the strict
    verdicts (None for any trial without one: strict pass^k is then undefined)."""

    __slots__ = ("passed", "scored", "strict", "strict_missing")

    def __init__(self) -> None:
        self.scored = self.passed = self.strict = 0
        self.strict_missing = False


class _ReportTally:
    """One `DomainReport` (a domain's, or the pooled one), one trial at a time: per-task counts and
    running totals, never the trials themselves (a summary's memory does not grow with the run)."""

    def __init__(self) -> None:
        self.by_task: dict[str, _TaskCounts] = {}
        self.usage: dict[str, Usage] = {}
        self.trials = self.errored = self.retried = self.lost = self.timed_out = 0
        self.scored_steps = self.scored = self.surface_success = 0
        self.end_reasons: Counter[str] = Counter()
        self.failure_categories: Counter[str] = Counter()
        self.outputs = OutputTally()
        self.critic = CriticTally()
        self.shares = SharesTally()
        self.reply_judge = ReplyJudgeTally()

    def add(self, key: str, record: TrialRecord, judgement: TrialJudgement) -> None:
        counts = self.by_task.get(key)
        if counts is None:
            counts = self.by_task[key] = _TaskCounts()
        self.trials += 1
        if record.status == "scored":
            counts.scored += 1
            counts.passed += record.passed
            if record.strict_passed is None:
                counts.strict_missing = True
            else:
                counts.strict += bool(record.strict_passed)
            self.scored += 1
            self.scored_steps += len(record.steps)
            grade = record.grade
            if not record.passed and grade is not None:
                if grade.failure_category:
                    self.failure_categories[grade.failure_category] += 1
                self.surface_success += grade.surface_success
        for role, spent in record.usage.items():
            self.usage[role] = self.usage.get(role, Usage()) + spent
        self.errored += record.status == "error"
        self.retried += record.attempts > 1
        self.lost += any(is_lost(reason) for reason in record.retried_for)
        self.timed_out += record.end_reason == "timeout"
        self.end_reasons[record.end_reason] += 1
        self.outputs.add(record)
        self.critic.add(record)
        self.shares.add(record, judgement)
        self.reply_judge.add(record)

    def report(self, planned: list[str] | None, trials: int, seed: int) -> DomainReport | None:
        tasks = planned if planned is not None else sorted(self.by_task)
        if not tasks:
            return None
        none = _TaskCounts()
        estimate: dict[str, TaskOutcome] = {}
        conservative: dict[str, TaskOutcome] = {}
        strict: dict[str, TaskOutcome] | None = {}
        for task_id in tasks:
            counts = self.by_task.get(task_id, none)
            # the estimate from its scored trials (none scored: `trials` failures), and the
            # conservative count with every unscored planned trial a failure
            estimate[task_id] = TaskOutcome(n=counts.scored or trials, successes=counts.passed)
            conservative[task_id] = TaskOutcome(n=max(trials, counts.scored), successes=counts.passed)
            if strict is not None:
                if counts.strict_missing:
                    strict = None
                else:
                    strict[task_id] = TaskOutcome(n=estimate[task_id].n, successes=counts.strict)
        scored_counts = {task_id: self.by_task.get(task_id, none).scored for task_id in tasks}
        unscored = sum(max(0, trials - count) for count in scored_counts.values())
        reliability = summarize_counts(estimate, seed=seed)
        costs = [u.cost for u in self.usage.values() if u.cost is not None]
        return DomainReport(
            **reliability.model_dump(),
            incomplete_tasks=sorted(task_id for task_id, count in scored_counts.items() if count < trials),
            missing_tasks=sorted(task_id for task_id, count in scored_counts.items() if count == 0),
            unscored_trials=unscored,
            pass_hat_conservative=summarize_counts(conservative, seed=seed).pass_hat if unscored else None,
            errored_trials=self.errored,
            retried_trials=self.retried,
            lost_trials=self.lost,
            timed_out_trials=self.timed_out,
            steps_mean=self.scored_steps / max(1, self.scored),
            usage=self.usage,
            outputs=self.outputs.result(),
            cost_per_trial=sum(costs) / self.trials if costs else None,
            end_reasons=dict(sorted(self.end_reasons.items())),
            failure_categories=dict(sorted(self.failure_categories.items())),
            surface_success=self.surface_success,
            critic=self.critic.result(),
            strict=None if strict is None else summarize_counts(strict, seed=seed),
            attribution=self.shares.result(),
            reply_judge=self.reply_judge.result(),
        )


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
    judged: Mapping[tuple[str, str, int], TrialJudgement] | None = None,
) -> RunSummary:
    """`run_status` is the store's status of the run, when known. `judged`: attribution
    judgements already made, by (domain, task id, trial index) (`castbench._results.report.streamed`: made
    as the trials were stored); the others are made here. `records` are read once, one at a time,
    and none is kept: the summary's memory does not grow with the run."""
    tallies = {name: _ReportTally() for name in config.domains}
    pooled_tally = _ReportTally()
    judged = {} if judged is None else judged  # made as the trials were stored
    for record in records:  # one pass, nothing of a record kept but its counts
        judgement = judged.get((record.domain, record.task_id, record.trial_index))
        if judgement is None:
            judgement = judge_trial(record)
        tally = tallies.get(record.domain)
        if tally is not None:
            tally.add(record.task_id, record, judgement)
        pooled_tally.add(f"{record.domain}/{record.task_id}", record, judgement)
    planned = config.planned_tasks or None
    domains: dict[str, DomainReport] = {}
    warnings: list[str] = []
    for name in config.domains:
        tasks = planned.get(name, []) if planned is not None else None
        report = tallies[name].report(tasks, config.trials, config.seed)
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
    overall = pooled_tally.report(pooled, config.trials, config.seed)
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
