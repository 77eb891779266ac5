"""Action-level annotations: `{verdict, failure_type, explanation}` for every proposed tool call
of a collected run, by the privileged labeler or the LLM pipeline, and how far the two agree.

The labeler's annotation is the label the rollout engine stored with each proposal
(`castbench._grading.labeler`: deterministic, from the ground truth and the true state at that
moment), turned into a structured rationale a critic can learn to write: which check decided
(`check`: authentication, confirmation, record status, arguments, unrevealed value, ...) and the
finding's particulars (the missing argument names, the value nothing revealed, the record's
status, the tool), not one of a few fixed sentences. Replies to the user are not annotated: a
deployed critic verifies tool calls (its default scope) and the labeler does not judge replies.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from castbench.agents import ToolCallAction
from castbench.domain import ActionLabel, TrialRecord
from castbench_cast.trajectories import Moment, moments

__all__ = [
    "Agreement",
    "Annotation",
    "AnnotationError",
    "FailureType",
    "agreement",
    "annotated_moments",
    "balance",
    "finding",
    "labeler_annotation",
    "moment_key",
    "read_annotations",
    "write_annotations",
]

FailureType = Literal["hallucination", "domain_violation", "wrong_tool", "none"]
Key = tuple[str, str, int, int, int]

_CHECKS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (check, re.compile(pattern))
    for check, pattern in (
        ("authentication", r"not been authenticated"),
        ("confirmation", r"confirmation"),
        ("record status", r"needs an? (?P<needed>\w+) \w+, but it is (?P<found>\w+)"),
        ("missing arguments", r"missing argument"),
        ("unknown tool", r"no tool '"),
        ("argument format", r"not a JSON object|invalid arguments"),
        ("unrevealed value", r"uses (?P<value>'.*?'), which nothing"),
        ("wrong arguments", r"wrong arguments"),
        ("no change warranted", r"no change is warranted"),
        ("different tool", r"needs a different tool"),
        ("needed now", r"in the ground truth"),
        ("supported read", r"a supported read"),
    )
)
"""The labeler's findings (its `reason`), by the check that made them; the first match names
the check."""
_MISSING = re.compile(r"missing argument '(\w+)'")


class AnnotationError(ValueError):
    """A run that cannot be annotated: the message names the task, trial and step."""


class Annotation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    domain: str
    task_id: str
    trial_index: int
    step: int
    round: int
    verdict: Literal["valid", "invalid"]
    failure_type: FailureType = "none"
    check: str | None = None
    """Which check decided (the labeler's structured rationale; None from the LLM pipeline)."""
    explanation: str
    annotator: str
    parse_error: str | None = None

    @property
    def key(self) -> Key:
        return self.domain, self.task_id, self.trial_index, self.step, self.round

    @classmethod
    def of(cls, record: TrialRecord, moment: Moment, **judgement: Any) -> Annotation:
        """The annotation of `moment`'s proposal in `record`: `judgement` holds the verdict,
        failure type, explanation and annotator."""
        return cls(
            domain=record.domain,
            task_id=record.task_id,
            trial_index=record.trial_index,
            step=moment.step.index,
            round=moment.proposal.round,
            **judgement,
        )


def moment_key(record: TrialRecord, moment: Moment) -> Key:
    """The key of the annotation of `moment`'s proposal in `record`."""
    return record.domain, record.task_id, record.trial_index, moment.step.index, moment.proposal.round


def annotated_moments(records: Iterable[TrialRecord]) -> Iterator[tuple[TrialRecord, Moment]]:
    """Every proposed tool call of the scored trials, in its context."""
    for record in records:
        if record.status != "scored":
            continue
        for moment in moments(record):
            if isinstance(moment.proposal.action, ToolCallAction):
                yield record, moment


def finding(label: ActionLabel, action: ToolCallAction) -> tuple[str, str]:
    """The labeler's finding on `action` as (check, particulars): the structured rationale."""
    check, match = next(
        ((name, found) for name, pattern in _CHECKS if (found := pattern.search(label.reason))),
        ("other", None),
    )
    tool = action.name
    if check == "missing arguments":
        detail = f"{tool} lacks {', '.join(_MISSING.findall(label.reason))}"
    elif check == "unrevealed value" and match is not None:
        detail = f"{tool} uses {match['value']}, which the conversation never showed"
    elif check == "record status" and match is not None:
        detail = f"{tool} needs a {match['needed']} record; it is {match['found']}"
    elif check == "authentication":
        detail = f"{tool} before the user was authenticated"
    elif check == "confirmation":
        detail = f"{tool} changes data without the user's explicit yes"
    elif check == "needed now":
        arguments = action.arguments if isinstance(action.arguments, dict) else {}
        detail = f"{tool}({', '.join(sorted(arguments))}) is what the request needs now"
    elif check == "supported read":
        detail = f"{tool} reads what the conversation supports"
    else:
        detail = f"{tool}: {_VERDICT_WORD.sub(_neutral, label.reason)}"
    return check, detail


_VERDICT_WORD = re.compile(r"\b(in)?valid\b", re.IGNORECASE)


def _neutral(match: re.Match[str]) -> str:
    """A verdict word in a finding's text, said without the label's word ("invalid arguments":
    "malformed arguments"): a rationale states what is wrong, it does not carry the label."""
    return "malformed" if match.group(1) else "well-formed"


def labeler_annotation(record: TrialRecord, moment: Moment) -> Annotation:
    label = moment.proposal.label
    where = f"task {record.task_id} trial {record.trial_index} step {moment.step.index}"
    if label is None or label.label == "unknown":
        raise AnnotationError(f"{where}: proposal {moment.proposal.round} has no labeler label")
    assert isinstance(moment.proposal.action, ToolCallAction)  # annotated_moments yields calls alone
    check, detail = finding(label, moment.proposal.action)
    return Annotation.of(
        record,
        moment,
        verdict=label.label,
        failure_type=label.failure_type if label.label == "invalid" else "none",
        check=check,
        explanation=detail,
        annotator="labeler",
    )


def write_annotations(path: Path, annotations: Iterable[Annotation]) -> None:
    with path.open("w") as handle:
        for annotation in annotations:
            handle.write(annotation.model_dump_json() + "\n")


def read_annotations(path: Path) -> dict[Key, Annotation]:
    found: dict[Key, Annotation] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            annotation = Annotation.model_validate_json(line)
        except ValueError as exc:
            raise AnnotationError(f"{path}:{number}: not an annotation: {str(exc).splitlines()[0]}") from exc
        found[annotation.key] = annotation
    return found


class Agreement(BaseModel):
    """How two annotators agree on the actions both annotated."""

    actions: int
    verdict_agreement: float
    cohen_kappa: float | None
    """Agreement on the verdict beyond chance (None when one annotator gave a single verdict)."""
    failure_type_agreement: float | None
    """On the actions both found invalid: same failure type."""
    confusion: dict[str, int]
    """`<first verdict>/<second verdict>` -> actions."""


def agreement(first: dict[Key, Annotation], second: dict[Key, Annotation]) -> Agreement:
    shared = sorted(set(first) & set(second))
    pairs = [(first[key], second[key]) for key in shared]
    confusion = Counter(f"{a.verdict}/{b.verdict}" for a, b in pairs)
    n = len(pairs)
    observed = sum(a.verdict == b.verdict for a, b in pairs) / n if n else 0.0
    kappa = None
    if n:
        share_a = sum(a.verdict == "valid" for a, _ in pairs) / n
        share_b = sum(b.verdict == "valid" for _, b in pairs) / n
        chance = share_a * share_b + (1 - share_a) * (1 - share_b)
        kappa = None if math.isclose(chance, 1.0) else (observed - chance) / (1 - chance)
    both_invalid = [(a, b) for a, b in pairs if a.verdict == b.verdict == "invalid"]
    types = (
        sum(a.failure_type == b.failure_type for a, b in both_invalid) / len(both_invalid)
        if both_invalid
        else None
    )
    return Agreement(
        actions=n,
        verdict_agreement=observed,
        cohen_kappa=kappa,
        failure_type_agreement=types,
        confusion=dict(sorted(confusion.items())),
    )


def balance(annotations: Iterable[Annotation]) -> dict[str, dict[str, int]]:
    items = list(annotations)
    return {
        "verdict": dict(sorted(Counter(a.verdict for a in items).items())),
        "failure_type": dict(sorted(Counter(a.failure_type for a in items).items())),
    }
