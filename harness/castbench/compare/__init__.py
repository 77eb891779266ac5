"""Comparing two runs task by task, and the CI regression gate built on that comparison."""

from castbench.compare.comparability import (
    comparability_number,
    comparability_problems,
    incomplete_runs,
    shared_domains,
)
from castbench.compare.gate import (
    Check,
    CheckResult,
    GateConfig,
    GateError,
    GateResult,
    UndecidedPolicy,
    Verdict,
    decide,
    load_gate_config,
    run_gate,
)
from castbench.compare.metric import Metric, MetricError, parse_metric
from castbench.compare.paired import PairedDifference, paired_metric
from castbench.compare.runs import Comparison, CriticDelta, DomainComparison, compare_runs
from castbench.compare.sources import SourceError, describe, load_summary

__all__ = [
    "Check",
    "CheckResult",
    "Comparison",
    "CriticDelta",
    "DomainComparison",
    "GateConfig",
    "GateError",
    "GateResult",
    "Metric",
    "MetricError",
    "PairedDifference",
    "SourceError",
    "UndecidedPolicy",
    "Verdict",
    "comparability_number",
    "comparability_problems",
    "compare_runs",
    "decide",
    "describe",
    "incomplete_runs",
    "load_gate_config",
    "load_summary",
    "paired_metric",
    "parse_metric",
    "run_gate",
    "shared_domains",
]
