"""The trial data a viewer page carries: stored records minus timings and usage, compressed.

The page reads the stored `TrialRecord` shape itself (one source for the trajectory format).
Timings are left out because they are noise the page does not show and they would make the
page differ between two runs with identical trajectories. A run of 960 trials is ~7 MB of
JSON and ~0.3 MB gzip-compressed, so pages of whole runs stay small enough to publish; the page
decompresses them with the browser's own `DecompressionStream`.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping, Sequence
from typing import Any

from castbench.attribution import attribute
from castbench.records.branches import TrialBranches
from castbench.records.trial import TrialRecord
from castbench.report.reasons import trial_reasons

__all__ = ["encode_trials", "trial_payload"]

_EXCLUDE: Any = {
    "usage": True,
    "duration_s": True,
    "steps": {
        "__all__": {
            "timing": True,
            "proposals": {"__all__": {"policy_s": True, "critic_s": True}},
        }
    },
}


def trial_payload(record: TrialRecord, branches: TrialBranches | None = None) -> dict[str, Any]:
    """The record as the page reads it; with `branches`, its counterfactual branches too (each
    with its steps from the branch point on, as a trial's steps are given)."""
    payload = record.model_dump(mode="json", exclude=_EXCLUDE, exclude_none=True)
    if branches is not None:
        payload["branches"] = [
            branch.model_dump(mode="json", exclude={"steps": _EXCLUDE["steps"]}, exclude_none=True)
            for branch in branches.branches
        ]
    payload["seed"] = str(record.seed)  # 64-bit seeds do not survive a JavaScript number
    attribution = attribute(record)
    if attribution is not None:  # the page highlights the decisive step
        payload["attribution"] = attribution.model_dump(
            mode="json", exclude={"evidence": {"diff"}}, exclude_none=True
        )
    reasons = trial_reasons(record)
    if reasons:  # the lines `runs show` prints under the trial, the same words
        payload["reasons"] = reasons
    return payload


def encode_trials(
    records: Sequence[TrialRecord], branches: Mapping[tuple[str, str, int], TrialBranches] | None = None
) -> str:
    """base64 of gzip of the JSON list of payloads, in the order the page indexes them; `branches`
    by (domain, task id, trial index)."""
    found = branches or {}
    payloads = [trial_payload(r, found.get((r.domain, r.task_id, r.trial_index))) for r in records]
    # unsorted: the page shows tool arguments in the order the agent gave them
    text = json.dumps(payloads, separators=(",", ":"))
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=9, mtime=0)).decode("ascii")
