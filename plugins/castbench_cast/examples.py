"""Training examples for the critic and the policy, as conversational `messages` (TRL's SFT
format): every message but the last is the model's input, the last (the assistant's) its target.

Inputs are rendered by castbench's own model agents' functions from a `public_briefing` (built
from the domain alone: no task can reach it) and the visible events of the trial, so a trained
model reads in `castbench eval` exactly what it read in training:
- critic: `critic_messages` (policy document, tools, conversation, proposed action) -> the
  annotation as JSON (`critic_target`): the verdict first (a greedy answer commits to it before
  anything else), then the failure type and the structured rationale (the check that decided,
  its particulars); or, `rationale-first`, the rationale before the verdict, the paper's order;
  `balanced` repeats examples of the rarer verdict (seeded) until both verdicts are as many, so a
  critic cannot do well by leaning to the majority verdict;
- policy: `policy_messages` in the prompted style (tools in the system prompt, one JSON action
  per turn), with the step's critiques unless RFT -> the action it executed, as JSON. An executed
  action the labeler marks invalid is never a target: a passed trial can still hold one (an
  unauthenticated call, an e-mail the user never gave), and training on it teaches the mistake.
  Such an example is dropped (not masked: each example has one target, so masking it leaves
  nothing to learn from); the action stays in the history of later examples, as it happened.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from castbench.agents import (
    MalformedAction,
    action_json,
    critic_messages,
    critic_system_prompt,
    policy_messages,
    public_briefing,
)
from castbench.domain import TrialRecord, load_domain
from castbench_cast.annotations import Annotation, AnnotationError, Key, annotated_moments
from castbench_cast.trajectories import moments

__all__ = [
    "POLICY_STYLE",
    "Examples",
    "balanced",
    "critic_examples",
    "critic_target",
    "policy_examples",
    "write_examples",
]

POLICY_STYLE = "prompted"
"""The trained policy is served as a plain chat model: `--policy openai/NAME?style=prompted`."""

Message = dict[str, Any]


@dataclass
class Examples:
    rows: list[list[Message]] = field(default_factory=list)
    balance: dict[str, Counter[str]] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)

    def add(self, messages: list[Message], **classes: str) -> None:
        self.rows.append(messages)
        for name, value in classes.items():
            self.balance.setdefault(name, Counter())[value] += 1


def critic_examples(
    records: Iterable[TrialRecord], annotations: dict[Key, Annotation], target: str = "annotation"
) -> Examples:
    """One example per annotated proposal; `target` orders the answer or leaves the rationale
    out of it (`critic_target`, `CriticDataStage`)."""
    examples = Examples()
    systems: dict[str, str] = {}
    for record, moment in annotated_moments(records):
        key = (record.domain, record.task_id, record.trial_index, moment.step.index, moment.proposal.round)
        annotation = annotations.get(key)
        if annotation is None:
            raise AnnotationError(
                f"task {record.task_id} trial {record.trial_index} step {moment.step.index} "
                f"round {moment.proposal.round}: not annotated (run annotate again)"
            )
        if annotation.parse_error is not None:
            examples.counts["skipped_unreadable_annotation"] += 1
            continue
        if record.domain not in systems:
            briefing = public_briefing(load_domain(record.domain), record.seed, record.trial_index)
            systems[record.domain] = critic_system_prompt(briefing)
        answer = critic_target(annotation, target)
        messages = critic_messages(systems[record.domain], moment.history, moment.proposal.action)
        messages.append({"role": "assistant", "content": json.dumps(answer)})
        examples.add(messages, verdict=annotation.verdict, failure_type=annotation.failure_type)
    return examples


def critic_target(annotation: Annotation, target: str) -> dict[str, str]:
    """The critic's answer for `annotation` (`CriticDataStage.target`): `verdict` the verdict and
    failure type; `annotation` those, then the rationale (the check that decided, its
    particulars); `rationale-first` the rationale, then the verdict and failure type (the
    paper's order). The verdict comes before the failure type: greedy decoding is not split
    over three failure types."""
    decision: dict[str, str] = {"verdict": annotation.verdict, "failure_type": annotation.failure_type}
    if target == "verdict":
        return decision
    rationale = {} if annotation.check is None else {"check": annotation.check}
    rationale["explanation"] = annotation.explanation
    if target == "rationale-first":
        return {**rationale, **decision}
    if target == "annotation":
        return {**decision, **rationale}
    raise ValueError(f"critic target {target!r}: annotation, verdict or rationale-first")


def balanced(examples: Examples, seed: int) -> Examples:
    """`examples` with the rarer verdicts' rows repeated (drawn with `seed`) until every verdict
    has as many rows as the commonest; the balance counts what was trained on, and
    `counts["repeated_for_balance"]` how many rows were added."""
    import random

    verdicts = examples.balance.get("verdict", Counter())
    if len(verdicts) < 2:
        return examples
    rows_by: dict[str, list[int]] = {}
    for index, messages in enumerate(examples.rows):
        rows_by.setdefault(json.loads(messages[-1]["content"])["verdict"], []).append(index)
    rng = random.Random(f"balance:{seed}")
    most = max(len(indices) for indices in rows_by.values())
    order = list(range(len(examples.rows)))
    for indices in rows_by.values():
        order += [rng.choice(indices) for _ in range(most - len(indices))]
    rng.shuffle(order)
    result = Examples(counts=Counter(examples.counts))
    result.counts["repeated_for_balance"] = len(order) - len(examples.rows)
    for index in order:
        answer = json.loads(examples.rows[index][-1]["content"])
        result.add(examples.rows[index], verdict=answer["verdict"], failure_type=answer["failure_type"])
    return result


def policy_examples(records: Iterable[TrialRecord], rft: bool, critiqued_only: bool = True) -> Examples:
    """One example per executed action of each successful trial. CAST (`rft` False) keeps only
    the critique-enriched successes, as the paper: a trial the critic never flagged teaches
    nothing RFT would not (`skipped_without_critiques` counts them). RFT keeps every success,
    without critiques in the inputs (its records come from the policy alone: see
    `Pipeline.policy_data`). `critiqued_only=False` keeps every success for CAST too (the
    stand-in's fallback when no critique exists, which the pipeline warns about)."""
    examples = Examples()
    for record in records:
        if not record.passed:
            continue
        critiqued = any(moment.critiques for moment in moments(record))
        if not rft and critiqued_only and not critiqued:
            examples.counts["skipped_without_critiques"] += 1
            continue
        examples.counts["trajectories"] += 1
        briefing = public_briefing(load_domain(record.domain), record.seed, record.trial_index)
        for moment in moments(record):
            if not moment.executed or isinstance(moment.proposal.action, MalformedAction):
                continue
            if moment.proposal.label is not None and moment.proposal.label.label == "invalid":
                examples.counts["dropped_invalid_targets"] += 1
                continue
            shown = () if rft else moment.critiques
            messages = policy_messages(briefing, moment.history + shown, POLICY_STYLE)
            messages.append({"role": "assistant", "content": action_json(moment.proposal.action)})
            examples.add(
                messages,
                action=moment.proposal.action.kind,
                after_critique="yes" if shown else "no",
            )
        examples.counts["trajectories_with_critiques"] += critiqued
    return examples


def write_examples(folder: Path, examples: Examples) -> list[str]:
    """`train.jsonl` (one `{"messages": [...]}` per line) and the same rows as a `datasets`
    dataset saved in `dataset/`. The output names, relative to `folder`."""
    import datasets  # the train extra; seconds to import

    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "train.jsonl").open("w") as handle:
        for messages in examples.rows:
            handle.write(json.dumps({"messages": messages}) + "\n")
    dataset = datasets.Dataset.from_list([{"messages": messages} for messages in examples.rows])
    dataset.save_to_disk(str(folder / "dataset"))
    return ["train.jsonl", "dataset"]
