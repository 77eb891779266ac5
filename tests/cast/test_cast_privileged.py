"""No privileged field reaches a model input in the critic or policy datasets.

Privileged data is the task (gold actions, hidden user facts, the simulator's brief), the
expected state, the grade and the labeler's output. The builders are run on a collected run whose
labels and grades carry canary strings, with every way to a task or an expected state closed: the
canaries must show up in the critic's targets (the labeler's output is what it learns to say) and
nowhere in any input message, and no task may be read at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from castbench._domain.domain import Domain
from castbench._records.trial import TrialRecord
from castbench_cast.annotations import annotated_moments, labeler_annotation
from castbench_cast.examples import critic_examples, policy_examples, write_examples
from castbench_cast.pipeline import Pipeline

CANARY = "CANARY-7f3a"


def _with_canaries(record: TrialRecord, index: int) -> TrialRecord:
    steps = []
    for step in record.steps:
        proposals = [
            proposal.model_copy(
                update={
                    "label": proposal.label.model_copy(update={"reason": f"{CANARY}-label-{index}-{n}"})
                    if proposal.label
                    else None
                }
            )
            for n, proposal in enumerate(step.proposals)
        ]
        steps.append(step.model_copy(update={"proposals": proposals}))
    grade = record.grade.model_copy(update={"missing_outputs": [f"{CANARY}-grade"]}) if record.grade else None
    return record.model_copy(update={"steps": steps, "grade": grade})


def _no_privileged_access(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a dataset builder read a task or an expected state")

    for name in ("tasks", "replay", "expected_state"):
        if hasattr(Domain, name):
            monkeypatch.setattr(Domain, name, refuse)


def test_no_privileged_field_reaches_a_model_input(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pipeline.collect()
    records = [_with_canaries(record, i) for i, record in enumerate(pipeline.records("collect"))]
    assert any(r.passed for r in records) and any(
        p.label and p.label.label == "invalid" for r in records for s in r.steps for p in s.proposals
    )
    _no_privileged_access(monkeypatch)
    annotations = {a.key: a for a in (labeler_annotation(r, m) for r, m in annotated_moments(records))}
    critic = critic_examples(records, annotations)
    policy = policy_examples(records, rft=False)
    rft = policy_examples(records, rft=True)
    rows = critic.rows + policy.rows + rft.rows
    # no critic ran: CAST keeps no trajectory (only critique-enriched ones), RFT every success
    assert critic.rows and rft.rows and policy.counts["skipped_without_critiques"] > 0
    for row in rows:
        for message in row[:-1]:
            assert CANARY not in message["content"], message["content"][:300]
    targets = [json.loads(row[-1]["content"]) for row in critic.rows]
    invalid = [t for t in targets if t["verdict"] == "invalid"]
    assert invalid and all(CANARY in t["explanation"] for t in invalid)  # labels did reach targets
    # the files the stages write hold the same rows
    write_examples(tmp_path / "critic", critic)
    lines = (tmp_path / "critic" / "train.jsonl").read_text().splitlines()
    assert [json.loads(line)["messages"] for line in lines] == critic.rows
