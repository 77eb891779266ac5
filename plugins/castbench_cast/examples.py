"""Training examples for the critic and the policy, as conversational `messages` (TRL's SFT
format): every message but the last is the model's input, the last (the assistant's) its target.

Inputs are rendered by castbench's own model agents' functions from a `public_briefing` (built
from the domain alone: no task can reach it) and the visible events of the trial, so a trained
model reads in `castbench eval` exactly what it read in training:
- critic: `critic_messages` (policy document, tools, conversation, proposed action) -> the
  annotation as JSON (explanation first: the rationale, then the verdict);
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

from castbench.agents.views import public_briefing
from castbench.conversation import MalformedAction
from castbench.domain import load_domain
from castbench.models.prompts import critic_messages, critic_system_prompt
from castbench.models.render import action_json, policy_messages
from castbench.records.trial import TrialRecord
from castbench_cast.annotations import Annotation, AnnotationError, Key, annotated_moments
from castbench_cast.trajectories import moments

__all__ = ["POLICY_STYLE", "Examples", "critic_examples", "policy_examples", "write_examples"]

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
    """One example per annotated proposal; `target` "verdict" leaves the rationale out of the
    answer (see `CriticDataStage`)."""
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
        if target == "annotation":
            answer = {
                "explanation": annotation.explanation,
                "failure_type": annotation.failure_type,
                "verdict": annotation.verdict,
            }
        else:  # the binary decision first: greedy decoding is not split over three failure types
            answer = {"verdict": annotation.verdict, "failure_type": annotation.failure_type}
        messages = critic_messages(systems[record.domain], moment.history, moment.proposal.action)
        messages.append({"role": "assistant", "content": json.dumps(answer)})
        examples.add(messages, verdict=annotation.verdict, failure_type=annotation.failure_type)
    return examples


def policy_examples(records: Iterable[TrialRecord], rft: bool) -> Examples:
    """One example per executed action of each successful trial; with `rft`, its critiques are
    left out of the inputs (successful trajectories without critiques, the paper's control)."""
    examples = Examples()
    for record in records:
        if not record.passed:
            continue
        examples.counts["trajectories"] += 1
        briefing = public_briefing(load_domain(record.domain), record.seed, record.trial_index)
        critiqued = False
        for moment in moments(record):
            if not moment.executed or isinstance(moment.proposal.action, MalformedAction):
                continue
            if moment.proposal.label is not None and moment.proposal.label.label == "invalid":
                examples.counts["dropped_invalid_targets"] += 1
                continue
            shown = () if rft else moment.critiques
            critiqued |= bool(moment.critiques)
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
