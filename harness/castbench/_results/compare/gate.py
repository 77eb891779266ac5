"""The regression gate: is the candidate credibly worse than the baseline by more than allowed?

Decision rule, per check (a metric, a domain or all shared tasks pooled, an allowed drop d):
take the paired interval of (candidate - baseline) at the chosen confidence (see
`castbench._results.compare.paired`), then

- FAIL      if its upper bound < -d: the candidate is credibly worse by more than allowed;
- PASS      if its lower bound >= -d: any drop is credibly within what is allowed;
- UNDECIDED otherwise: the interval straddles -d, the run is too small to tell.

With a two-sided 95% interval a FAIL is wrong at most ~2.5% of the time, and so is a PASS.
UNDECIDED is a result of its own (exit 3 from the CLI) rather than a silent pass or fail: the
honest answer to "did this release regress by more than 2 points?" on 18 tasks is often "this
run cannot tell", and the fix is more tasks or trials, not a lower bar. A gate's verdict is the
worst of its checks: FAIL over UNDECIDED over PASS.
"""

from __future__ import annotations

import tomllib
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from castbench._results.compare.metric import parse_metric
from castbench._results.compare.paired import PairedDifference, paired_metric
from castbench._results.compare.sources import describe
from castbench._results.compare.undecided import UndecidedPolicy
from castbench._results.report.summary import DomainReport, RunSummary

__all__ = [
    "Check",
    "CheckResult",
    "GateConfig",
    "GateError",
    "GateResult",
    "UndecidedPolicy",
    "Verdict",
    "check_report",
    "decide",
    "load_gate_config",
    "run_gate",
]


OVERALL = "overall"


class GateError(ValueError):
    """Input the gate cannot use (exit 2): a missing domain, an impossible k, a bad config."""


class Verdict(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    UNDECIDED = "UNDECIDED"


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str
    max_drop: float = Field(ge=0, le=1)
    """Largest acceptable fall of the metric, in its own units (0.02 = two points of pass^k)."""
    domain: str | None = None
    """A domain both runs share, or None for all shared tasks pooled."""
    confidence: float | None = Field(None, gt=0, lt=1)

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        return parse_metric(value).name

    @property
    def label(self) -> str:
        return f"{self.metric} · {self.domain or OVERALL}"


class GateConfig(BaseModel):
    """`gate.toml`, kept in the agent's repository next to its CI workflow."""

    model_config = ConfigDict(extra="forbid")

    confidence: float | None = Field(None, gt=0, lt=1)
    undecided: UndecidedPolicy | None = None
    checks: list[Check] = Field(default_factory=list)


class CheckResult(BaseModel):
    check: Check
    verdict: Verdict
    paired: PairedDifference

    @property
    def reason(self) -> str:
        if self.verdict is Verdict.FAIL:
            return "credibly worse by more than the allowed drop"
        if self.verdict is Verdict.PASS:
            return "any drop is credibly within the allowed drop"
        return (
            f"the interval straddles {-self.check.max_drop:+.3f}: the run is too small to decide "
            f"({self.paired.shared_tasks} shared tasks); more tasks or trials narrow the interval"
        )


class GateResult(BaseModel):
    baseline: str
    candidate: str
    results: list[CheckResult]
    warnings: list[str] = Field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        verdicts = {result.verdict for result in self.results}
        for worst in (Verdict.FAIL, Verdict.UNDECIDED):
            if worst in verdicts:
                return worst
        return Verdict.PASS

    def exit_code(self, undecided: UndecidedPolicy) -> int:
        verdict = self.verdict
        if verdict is Verdict.UNDECIDED:
            return {UndecidedPolicy.UNDECIDED: 3, UndecidedPolicy.FAIL: 1, UndecidedPolicy.PASS: 0}[undecided]
        return 1 if verdict is Verdict.FAIL else 0


def decide(paired: PairedDifference, max_drop: float) -> Verdict:
    if paired.high < -max_drop:
        return Verdict.FAIL
    if paired.low >= -max_drop:
        return Verdict.PASS
    return Verdict.UNDECIDED


def load_gate_config(path: Path) -> GateConfig:
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise GateError(f"cannot read gate config {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise GateError(f"{path}: not valid TOML: {exc}") from exc
    try:
        return GateConfig.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in exc.errors()
        )
        raise GateError(f"{path}: {problems}") from exc


def check_report(summary: RunSummary, domain: str | None, who: str) -> DomainReport:
    """The report a check reads: a domain's, or all tasks pooled."""
    if domain is None:
        return summary.overall
    if domain not in summary.domains:
        raise GateError(
            f"the {who} ({summary.run_id}) has no scored domain '{domain}' (it has {sorted(summary.domains)})"
        )
    return summary.domains[domain]


def run_gate(
    baseline: RunSummary, candidate: RunSummary, checks: list[Check], confidence: float
) -> GateResult:
    if not checks:
        raise GateError(
            "nothing to check: give --metric with --max-drop, or --config gate.toml with [[checks]]"
        )
    results: list[CheckResult] = []
    warnings: list[str] = []
    for check in checks:
        base = check_report(baseline, check.domain, "baseline")
        cand = check_report(candidate, check.domain, "candidate")
        try:
            paired = paired_metric(
                base, cand, parse_metric(check.metric), confidence=check.confidence or confidence
            )
        except ValueError as exc:
            raise GateError(f"{check.label}: {exc}") from exc
        only = len(base.per_task) + len(cand.per_task) - 2 * paired.shared_tasks
        if only:
            warnings.append(
                f"{check.label}: {only} task(s) scored in only one run are left out of the pairing"
            )
        results.append(CheckResult(check=check, verdict=decide(paired, check.max_drop), paired=paired))
    return GateResult(
        baseline=describe(baseline),
        candidate=describe(candidate),
        results=results,
        warnings=sorted(set(warnings)),
    )
