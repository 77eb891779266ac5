"""Whether two runs may be compared at all.

A domain's version is `N-X`; scores are comparable only while N is the same (new tasks, data,
tools or policy bump it). pass^k also depends on n, the trials per task: pass^4 estimated from
8 trials and from 4 are different estimates with different noise, so runs with different n are
refused too unless the user forces it.
"""

from __future__ import annotations

from castbench.report import RunSummary

__all__ = ["comparability_number", "comparability_problems", "shared_domains"]


def comparability_number(version: str) -> str:
    """`1-3` -> `1`: the part of a domain version that must match for scores to compare."""
    return version.split("-", 1)[0]


def shared_domains(baseline: RunSummary, candidate: RunSummary) -> list[str]:
    return sorted(baseline.domains.keys() & candidate.domains.keys())


def _versions(summary: RunSummary) -> dict[str, str]:
    return {str(name): str(version) for name, version in summary.config.get("domains", {}).items()}


def comparability_problems(baseline: RunSummary, candidate: RunSummary) -> list[str]:
    """Why these runs' scores should not be compared (empty when they may be)."""
    problems: list[str] = []
    base_versions, cand_versions = _versions(baseline), _versions(candidate)
    for name in sorted(base_versions.keys() & cand_versions.keys()):
        a, b = base_versions[name], cand_versions[name]
        if comparability_number(a) != comparability_number(b):
            problems.append(
                f"domain {name}: version {a} vs {b} — scores of different comparability numbers "
                f"({comparability_number(a)} vs {comparability_number(b)}) measure different tasks"
            )
    base_trials, cand_trials = baseline.config.get("trials"), candidate.config.get("trials")
    if base_trials != cand_trials:
        problems.append(f"trials per task differ: {base_trials} (baseline) vs {cand_trials} (candidate)")
    return problems
