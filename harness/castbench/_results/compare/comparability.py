"""Whether two runs may be compared at all.

A domain's version is `N-X`; scores are comparable only while N is the same (new tasks, data,
tools or policy bump it). So is any other difference in what was measured rather than who was
measured: the user simulator, the step limit, the user's traits, the perturbations (tool faults,
user and environment perturbations, with their rates and seed), the tasks selected, the grading
mode, the reply grader (the rules or a model judge, `--reply-judge`), and (when both runs have a
critic) how the critic sits in the loop. The agents themselves
(policy, critic, their model settings) and the seed may differ: that is the point. So may n, the
trials per task: pass^k from n trials is an unbiased estimate for every n >= k, and the paired
bootstrap over tasks carries the extra noise of the smaller run into the interval; a candidate
topped up with `eval --add-trials` is gated against a baseline with another n. Trials must have
been kept independent the same way (`TrialIsolation`), and neither run may hold retries its agent
could have caused.
"""

from __future__ import annotations

import json
from typing import Any

from castbench._records.config import RunConfig
from castbench._results.report.summary import RunSummary

__all__ = [
    "comparability_number",
    "comparability_problems",
    "incomplete_runs",
    "isolation_problems",
    "setting_differences",
    "shared_domains",
]


def comparability_number(version: str) -> str:
    """`1-3` -> `1`: the part of a domain version that must match for scores to compare."""
    return version.split("-", 1)[0]


def shared_domains(baseline: RunSummary, candidate: RunSummary) -> list[str]:
    return sorted(baseline.domains.keys() & candidate.domains.keys())


def _versions(summary: RunSummary) -> dict[str, str]:
    return dict(summary.config.domains)


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
    return (
        problems
        + setting_differences(baseline.config, candidate.config)
        + isolation_problems(baseline, candidate)
    )


def isolation_problems(baseline: RunSummary, candidate: RunSummary) -> list[str]:
    """Runs whose trials were kept independent differently (a fresh process per trial against an
    agent service's or `--in-process` memory: pass^k of dependent trials is not pass^k), and runs
    with retries an agent could have caused (a re-rolled trial is not an independent one)."""
    problems = []
    before, after = baseline.provenance, candidate.provenance
    if before is not None and after is not None and before.trial_isolation != after.trial_isolation:
        problems.append(
            f"trial isolation differs: {before.trial_isolation} (baseline) vs "
            f"{after.trial_isolation} (candidate)"
        )
    for label, summary in (("baseline", baseline), ("candidate", candidate)):
        retried = sum(report.retried_trials for report in summary.domains.values())
        roles = [] if summary.provenance is None else summary.provenance.could_fake_infrastructure
        if retried and roles:
            problems.append(
                f"the {label} retried {retried} trial(s) after infrastructure errors that its "
                f"{', '.join(roles)} could have raised"
            )
        lost = sum(report.lost_trials for report in summary.domains.values())
        if lost:  # a killed castbench re-rolls a trial as surely as a faked error does
            problems.append(
                f"the {label} played {lost} trial(s) again after castbench's process was lost during them"
            )
    return problems


def _setting(config: RunConfig, key: str) -> Any:
    """A measurement setting as a run recorded it, as JSON data."""
    if key == "user":  # a model user is its model string and settings
        return [config.user, config.extra.get("models", {}).get("user")]
    if key == "grading":  # runs from before grading modes matched outputs τ-Bench's way
        return config.grading_mode
    return config.model_dump(mode="json", include={key})[key]


_MEASUREMENT = {
    "split": "split",
    "task_ids": "task selection (--tasks)",
    "user": "user simulator",
    "limits": "step limit (--max-steps)",
    "traits": "user traits (--traits)",
    "perturbations": "perturbations (--tool-faults, --user-perturb, --env-perturb and their kinds, seed)",
    "grading": "grading mode",
    "reply_judge": "reply grader (--reply-judge: a model judge, or the rules)",
}


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":")) if not isinstance(value, str) else value


def setting_differences(baseline: RunConfig, candidate: RunConfig) -> list[str]:
    """Measurement settings on which two run configs differ, named, with both values."""
    keys = dict(_MEASUREMENT)
    if baseline.critic != "none" and candidate.critic != "none":
        keys["verification"] = "critic loop (--rounds, --on-exhausted, --verify)"
    found = []
    for key, label in keys.items():
        base, cand = _setting(baseline, key), _setting(candidate, key)
        if base != cand:
            found.append(f"{label} differs: {_show(base)} (baseline) vs {_show(cand)} (candidate)")
    return found


def incomplete_runs(*summaries: RunSummary) -> list[str]:
    """Why any of these runs' figures are not final (unscored planned trials, a failed or stopped
    run), naming the tasks: a gate or board on them would judge an agent by part of its work."""
    return [reason for summary in summaries if (reason := summary.incomplete_reason()) is not None]
