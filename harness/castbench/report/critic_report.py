"""Critic figures of a set of trials, recomputed from the stored per-proposal records.

Per verified action: the critic's verdict against the labeler's label (confusion matrix).
Per step with a rejection: did the policy insist (resistance), and was the executed action then
valid (correction, for rejected invalid actions) or invalid (harmful revision, for rejected valid
ones)? Paired with a run of the same policy without the critic: helpfulness and harmfulness.
"""

from __future__ import annotations

from collections.abc import Iterable

from castbench.agents.conversation import Usage, canonical_action
from castbench.metrics import (
    CriticMetrics,
    CriticRecord,
    correction_rate,
    critic_metrics,
    harmful_revision_rate,
    harmfulness,
    helpfulness,
    resistance_rate,
)
from castbench.runner.records import StepRecord, TrialRecord

__all__ = ["CriticReport", "critic_report", "paired_effect"]


class CriticReport(CriticMetrics):
    resistance_rate: float | None
    """After a rejection, the revision is the same action (same tool, same canonical arguments)."""
    correction_rate: float | None
    """Of steps whose first rejected proposal was invalid, the share that executed a valid action."""
    harmful_revision_rate: float | None
    """Of steps whose first rejected proposal was valid, the share that executed an invalid action."""
    rounds_mean: float | None
    """Critic verdicts per verified step."""
    rejections: int
    blocked_steps: int
    """Steps whose last proposal was still rejected and, with `--on-exhausted block`, not run."""
    critic_usage: Usage
    critic_seconds: float
    policy_seconds: float
    helpfulness: float | None = None
    """Paired: trials failed without the critic and passed with it / trials failed without."""
    harmfulness: float | None = None
    """Paired: trials passed without the critic and failed with it / trials passed without."""
    paired_run_id: str | None = None
    pass_hat_without_critic: dict[int, float] | None = None
    """Paired: the same policy's pass^k without the critic (same tasks, seeds, trials)."""


def _executed_label(step: StepRecord) -> str | None:
    if step.action is None:
        return None
    last = step.proposals[-1]
    return last.label.label if last.label is not None else None


def critic_report(trials: Iterable[TrialRecord]) -> CriticReport | None:
    records: list[CriticRecord] = []
    rejections = resisted = 0
    invalid_rejected = corrected = valid_rejected = harmed = 0
    verified_steps = verdicts = blocked = 0
    usage = Usage()
    critic_s = policy_s = 0.0
    for trial in trials:
        usage = usage + trial.usage.get("critic", Usage())
        for step in trial.steps:
            policy_s += step.timing.policy_s
            critic_s += step.timing.critic_s
            judged = [p for p in step.proposals if p.verdict is not None]
            if not judged:
                continue
            verified_steps += 1
            verdicts += len(judged)
            blocked += step.action is None
            for proposal in judged:
                assert proposal.verdict is not None
                label = proposal.label
                records.append(
                    CriticRecord(
                        "flag" if proposal.verdict.flags else "pass",
                        label.label if label is not None else "unknown",
                        label.failure_type if label is not None and label.failure_type != "none" else None,
                    )
                )
            for current, following in zip(step.proposals, step.proposals[1:], strict=False):
                if current.verdict is not None and current.verdict.flags:
                    rejections += 1
                    resisted += canonical_action(current.action) == canonical_action(following.action)
            first_rejected = next((p for p in judged if p.verdict is not None and p.verdict.flags), None)
            if first_rejected is None or first_rejected.label is None:
                continue
            executed = _executed_label(step)
            if first_rejected.label.label == "invalid":
                invalid_rejected += 1
                corrected += executed == "valid"
            elif first_rejected.label.label == "valid":
                valid_rejected += 1
                harmed += executed == "invalid"
    if not records:
        return None
    metrics = critic_metrics(records)
    return CriticReport(
        **metrics.model_dump(),
        resistance_rate=resistance_rate(resisted, rejections),
        correction_rate=correction_rate(corrected, invalid_rejected),
        harmful_revision_rate=harmful_revision_rate(harmed, valid_rejected),
        rounds_mean=verdicts / verified_steps if verified_steps else None,
        rejections=rejections,
        blocked_steps=blocked,
        critic_usage=usage,
        critic_seconds=critic_s,
        policy_seconds=policy_s,
    )


def paired_effect(
    with_critic: Iterable[TrialRecord], without: Iterable[TrialRecord]
) -> tuple[float | None, float | None]:
    """(helpfulness, harmfulness) over trials scored in both runs, paired by (domain, task, trial)."""
    baseline = {(t.domain, t.task_id, t.trial_index): t.passed for t in without if t.status == "scored"}
    helped = failed_alone = harmed = passed_alone = 0
    for trial in with_critic:
        key = (trial.domain, trial.task_id, trial.trial_index)
        if trial.status != "scored" or key not in baseline:
            continue
        if baseline[key]:
            passed_alone += 1
            harmed += not trial.passed
        else:
            failed_alone += 1
            helped += trial.passed
    return helpfulness(helped, failed_alone), harmfulness(harmed, passed_alone)
