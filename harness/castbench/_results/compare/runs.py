"""Two runs side by side, task by task: what `castbench compare` shows.

Per domain, on the tasks both runs scored: the paired difference of pass^k for every k, the
tasks that flipped between reliable (all n trials passed) and unreliable, and, when both runs
had a critic, how its false-flag and detection rates moved. Critic rates come without an
interval: a summary keeps the rates and counts, not the per-action records a bootstrap needs.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from castbench._records.metrics import ReliabilitySummary
from castbench._records.metrics.passk import reported_ks
from castbench._results.compare.comparability import shared_domains
from castbench._results.compare.metric import Metric
from castbench._results.compare.paired import PairedDifference, paired_metric
from castbench._results.compare.sources import describe
from castbench._results.report.summary import DomainReport, RunSummary

__all__ = ["CRITIC_RATES", "Comparison", "CriticDelta", "DomainComparison", "compare_domain", "compare_runs"]

CRITIC_RATES = ("false_flag_rate", "detection_rate")


class CriticDelta(BaseModel):
    rate: str
    baseline: float
    candidate: float

    @property
    def difference(self) -> float:
        return self.candidate - self.baseline


class DomainComparison(BaseModel):
    domain: str
    shared_tasks: int
    only_baseline: list[str] = Field(default_factory=list)
    only_candidate: list[str] = Field(default_factory=list)
    pass_hat: list[PairedDifference]
    """pass^1 .. pass^n, in order of k."""
    became_unreliable: list[str]
    """Tasks whose every trial passed in the baseline but not in the candidate."""
    became_reliable: list[str]
    critic: list[CriticDelta] = Field(default_factory=list)
    attribution: list[CriticDelta] = Field(default_factory=list)
    """Failures blamed on each party, trials with a simulator fault, near-misses
    (`castbench._results.attribution`): two runs that differ only in the user simulator's model show
    its fidelity here."""


class Comparison(BaseModel):
    baseline: str
    candidate: str
    confidence: float
    domains: list[DomainComparison]
    overall: DomainComparison | None = None
    """All shared tasks pooled, when the runs share more than one domain."""


def _reliable(summary: ReliabilitySummary, task_id: str) -> bool:
    outcome = summary.per_task[task_id]
    return outcome.successes == outcome.n


def _critic(baseline: DomainReport, candidate: DomainReport) -> list[CriticDelta]:
    if baseline.critic is None or candidate.critic is None:
        return []
    deltas = []
    for rate in CRITIC_RATES:
        base, cand = getattr(baseline.critic, rate), getattr(candidate.critic, rate)
        if base is not None and cand is not None:
            deltas.append(CriticDelta(rate=rate, baseline=base, candidate=cand))
    return deltas


def _attribution(baseline: DomainReport, candidate: DomainReport) -> list[CriticDelta]:
    base, cand = baseline.attribution, candidate.attribution
    if base is None or cand is None:
        return []
    deltas = [
        CriticDelta(
            rate=f"failures blamed on the {party}",
            baseline=base.party_shares.get(party, 0.0),
            candidate=cand.party_shares.get(party, 0.0),
        )
        for party in ("agent", "user", "harness")
        if base.not_passed and cand.not_passed
    ]
    for rate, field in (
        ("trials with a simulator fault", "simulator_fault_share"),
        ("near-misses among passes", "near_miss_share"),
    ):
        a, b = getattr(base, field), getattr(cand, field)
        if a is not None and b is not None:
            deltas.append(CriticDelta(rate=rate, baseline=a, candidate=b))
    return deltas


def compare_domain(
    name: str, baseline: DomainReport, candidate: DomainReport, confidence: float
) -> DomainComparison:
    shared = sorted(baseline.per_task.keys() & candidate.per_task.keys())
    if not shared:
        raise ValueError(f"domain {name}: the runs share no scored task")
    k_max = min(baseline.trials_per_task, candidate.trials_per_task)
    return DomainComparison(
        domain=name,
        shared_tasks=len(shared),
        only_baseline=sorted(baseline.per_task.keys() - candidate.per_task.keys()),
        only_candidate=sorted(candidate.per_task.keys() - baseline.per_task.keys()),
        pass_hat=[
            paired_metric(baseline, candidate, Metric("pass_hat", k), confidence=confidence)
            for k in reported_ks(k_max)
        ],
        became_unreliable=[t for t in shared if _reliable(baseline, t) and not _reliable(candidate, t)],
        became_reliable=[t for t in shared if not _reliable(baseline, t) and _reliable(candidate, t)],
        critic=_critic(baseline, candidate),
        attribution=_attribution(baseline, candidate),
    )


def compare_runs(baseline: RunSummary, candidate: RunSummary, *, confidence: float = 0.95) -> Comparison:
    names = shared_domains(baseline, candidate)
    if not names:
        raise ValueError(
            f"the runs share no domain: baseline has {sorted(baseline.domains) or 'none'}, "
            f"candidate has {sorted(candidate.domains) or 'none'}"
        )
    domains = [compare_domain(n, baseline.domains[n], candidate.domains[n], confidence) for n in names]
    overall = None
    if len(names) > 1:
        overall = compare_domain("overall", baseline.overall, candidate.overall, confidence)
    return Comparison(
        baseline=describe(baseline),
        candidate=describe(candidate),
        confidence=confidence,
        domains=domains,
        overall=overall,
    )
