"""The trial data a viewer page carries: stored records minus timings and usage, compressed.

The page reads the stored `TrialRecord` shape itself (one source for the trajectory format).
Timings are left out because they are noise the page does not show and they would make the
page differ between two runs with identical trajectories. Trials that then differ only in their
index and seed (a deterministic agent's trials of a task) are carried once: a chunk is
`{"bodies": [payload, ...], "trials": [[body, trial_index, seed], ...]}`, gzip-compressed and
base64-encoded; the page decompresses it with the browser's own `DecompressionStream`.

A run's trials are cut into chunks of at most `CHUNK_BUDGET` characters of JSON (a trial larger
than that alone makes a chunk), so a board's page loads only the chunk of the trial opened: a
floor agent's 2,168 trials were one 7.7 MB page.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from castbench._records.store.export import GzipStream
from castbench._records.trial import TrialRecord
from castbench._results.attribution import attribute
from castbench._results.report.reasons import trial_reasons
from castbench_analyses.branches import TrialBranches

__all__ = [
    "CHUNK_BUDGET",
    "StreamedChunk",
    "TrialChunk",
    "decode_trials",
    "encode_trials",
    "trial_chunks",
    "trial_payload",
]

CHUNK_BUDGET = 512_000
"""Characters of JSON in one chunk: compressed and base64-encoded it is at most ~0.7 MB, under
a board page's limit (`castbench_boards.viewer.page.PAGE_LIMIT`) even for text gzip cannot shrink."""

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
        # without the trial's own domain, task and index: the payload has them, and trials that
        # played the same conversation share one body (`trial_chunks`)
        payload["attribution"] = attribution.model_dump(
            mode="json",
            exclude={"evidence": {"diff"}, "domain": True, "task": True, "trial": True},
            exclude_none=True,
        )
    reasons = trial_reasons(record)
    if reasons:  # the lines `runs show` prints under the trial, the same words
        payload["reasons"] = reasons
    return payload


@dataclass(frozen=True)
class TrialChunk:
    start: int
    """The page's index of its first trial."""
    count: int
    data: str
    """base64 of gzip of the chunk's JSON."""


class _Chunker:
    """Trials in page order into chunks of at most `budget` characters of JSON, each distinct
    payload once per chunk (found by its text: one dict lookup per trial, linear in trials)."""

    def __init__(self, budget: int | None) -> None:
        self.budget = budget
        self.chunks: list[TrialChunk] = []
        self.start = 0
        self._reset()

    def _reset(self) -> None:
        self.bodies: dict[str, int] = {}
        self.refs: list[str] = []
        self.size = 0

    def add(self, payload: dict[str, Any]) -> None:
        index, seed = payload.pop("trial_index"), payload.pop("seed")
        # unsorted: the page shows tool arguments in the order the agent gave them
        text = json.dumps(payload, separators=(",", ":"))
        ref = json.dumps([self.bodies.get(text, len(self.bodies)), index, seed], separators=(",", ":"))
        cost = len(ref) + 1 + (0 if text in self.bodies else len(text) + 1)
        if self.budget is not None and self.refs and self.size + cost > self.budget:
            self.flush()
            ref = json.dumps([0, index, seed], separators=(",", ":"))
            cost = len(ref) + len(text) + 2
        self.bodies.setdefault(text, len(self.bodies))
        self.refs.append(ref)
        self.size += cost

    def flush(self) -> None:
        """Close the chunk being filled, if it holds a trial."""
        if not self.refs:
            return
        data = _pack(self.bodies, self.refs)
        self.chunks.append(TrialChunk(start=self.start, count=len(self.refs), data=data))
        self.start += len(self.refs)
        self._reset()


def _pack(bodies: Iterable[str], refs: Iterable[str]) -> str:
    text = f'{{"bodies":[{",".join(bodies)}],"trials":[{",".join(refs)}]}}'
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=9, mtime=0)).decode("ascii")


def trial_chunks(
    records: Sequence[TrialRecord],
    branches: Mapping[tuple[str, str, int], TrialBranches] | None = None,
    budget: int | None = CHUNK_BUDGET,
) -> list[TrialChunk]:
    """The payloads of `records`, in the order the page indexes them, cut into chunks of at most
    `budget` characters of JSON (None: one chunk); `branches` by (domain, task id, trial index)."""
    found = branches or {}
    chunker = _Chunker(budget)
    for record in records:
        chunker.add(trial_payload(record, found.get((record.domain, record.task_id, record.trial_index))))
    chunker.flush()
    return chunker.chunks


def encode_trials(
    records: Sequence[TrialRecord], branches: Mapping[tuple[str, str, int], TrialBranches] | None = None
) -> str:
    """All of `records` as one chunk, for a page that carries its trials itself (`castbench view`)."""
    chunks = trial_chunks(records, branches, budget=None)
    return chunks[0].data if chunks else _pack([], [])


class _Base64Out:
    """Bytes written as base64 text to `out`, three bytes at a time: the text `b64encode` gives
    for all the bytes at once."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.pending = b""

    def write(self, data: bytes) -> int:
        data = self.pending + data
        whole = len(data) - len(data) % 3
        self.out.write(base64.b64encode(data[:whole]).decode("ascii"))
        self.pending = data[whole:]
        return len(data)

    def close(self) -> None:
        self.out.write(base64.b64encode(self.pending).decode("ascii"))
        self.pending = b""


class StreamedChunk:
    """`encode_trials`'s one chunk, written to `out` as each payload is added (in page order),
    to the same text: each distinct payload's JSON is compressed when first met and then
    dropped (a digest of it is kept); the references, a few bytes a trial, at the end (#59)."""

    def __init__(self, out: TextIO, refs: TextIO) -> None:
        """`refs`: a file the references wait in (a temporary file: not memory)."""
        self._base64 = _Base64Out(out)
        self._packer = GzipStream(self._base64)
        self._packer.write('{"bodies":[')
        self._bodies: dict[bytes, int] = {}
        self._refs = refs
        self._first = True

    def add(self, payload: dict[str, Any]) -> None:
        index, seed = payload.pop("trial_index"), payload.pop("seed")
        text = json.dumps(payload, separators=(",", ":"))  # as `_Chunker` writes it
        digest = hashlib.sha256(text.encode()).digest()
        body = self._bodies.get(digest)
        if body is None:
            body = self._bodies[digest] = len(self._bodies)
            self._packer.write(("," if body else "") + text)
        ref = json.dumps([body, index, seed], separators=(",", ":"))
        self._refs.write(("" if self._first else ",") + ref)
        self._first = False

    def finish(self) -> None:
        self._packer.write('],"trials":[')
        self._refs.seek(0)
        while block := self._refs.read(1 << 20):
            self._packer.write(block)
        self._packer.write("]}")
        self._packer.close()
        self._base64.close()


def decode_trials(data: str) -> list[dict[str, Any]]:
    """The payloads a chunk holds, each whole again (what the page rebuilds in the browser)."""
    chunk = json.loads(gzip.decompress(base64.b64decode(data)))
    bodies = chunk["bodies"]
    return [{**bodies[body], "trial_index": index, "seed": seed} for body, index, seed in chunk["trials"]]
