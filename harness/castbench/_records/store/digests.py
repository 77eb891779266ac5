"""A digest of every trial record castbench stores, kept outside the store, so that `verify`
catches a record changed after castbench wrote it.

Why outside: re-executing a trial proves that its record is self-consistent, not that it is the
record castbench wrote. Whoever can write the store (another user of a shared Postgres, an agent
that reached it) can replace a failed trial with a passing trial of the same task from another
run: that record replays and re-grades as stored. castbench appends the SHA-256 of each record
it stores to a file in its per-user state folder (`castbench._base.places`), which no agent's sandbox
can reach; `verify` compares every stored record with it. A record of a store this machine did
not write (a colleague's run in a shared store, a store made before digests were kept) has no
digest here, and `verify` says how many.

One file per store (named by a hash of the store's location), one JSON line per stored record,
appended in one `write` (under `PIPE_BUF`, so concurrent castbench processes do not interleave);
the last line of a trial wins (an errored try replaced by its scored one).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from castbench._base.places import state_dir
from castbench._records.store.access import sqlite_file
from castbench._records.store.connect import server_location

__all__ = ["DigestCheck", "check_digests", "digest_of", "record_digests"]


def _location(url: str) -> str:
    """The store's identity, however it was spelled: a SQLite file's real path, a server URL
    without its password."""
    file = sqlite_file(url)
    if file is not None:
        return "sqlite:" + os.path.realpath(file.path)
    return server_location(url)


def _file(url: str) -> Path:
    name = hashlib.sha256(_location(url).encode()).hexdigest()[:32]
    return state_dir() / "digests" / f"{name}.jsonl"


def _key(domain: str, task_id: str, trial_index: int) -> str:
    return json.dumps([domain, task_id, trial_index])


def digest_of(record_json: str) -> str:
    return hashlib.sha256(record_json.encode()).hexdigest()


_PIPE_BUF = 4096
"""Bytes one `write` may take and stay whole beside other processes' appends (`PIPE_BUF`)."""


def record_digests(url: str, stored: list[tuple[str, str, str, int, str]]) -> None:
    """Remember the digest of each `(run id, domain, task id, trial index, record JSON)` of a batch
    of records stored in one transaction (best effort: a state folder that cannot be written leaves
    them without one, which `verify` reports): one file open for all, and as few writes as keep each
    under `PIPE_BUF` (whole lines only), so concurrent castbench processes still never interleave."""
    if not stored:
        return
    lines = [
        json.dumps({"run": run, "trial": _key(domain, task, index), "sha256": digest_of(record_json)}) + "\n"
        for run, domain, task, index, record_json in stored
    ]
    chunks, chunk = [], ""
    for line in lines:
        if chunk and len(chunk) + len(line) > _PIPE_BUF:
            chunks.append(chunk)
            chunk = ""
        chunk += line
    chunks.append(chunk)
    path = _file(url)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            for chunk in chunks:
                os.write(fd, chunk.encode())
        finally:
            os.close(fd)
    except OSError:
        return


class DigestCheck:
    """What the digests say of a run's stored records."""

    def __init__(self, changed: list[str], unknown: int) -> None:
        self.changed = changed
        """`domain task trial` of each record that differs from what castbench stored."""
        self.unknown = unknown
        """Records with no digest on this machine."""


def check_digests(url: str, run_id: str, stored: Iterable[tuple[str, str, int, str]]) -> DigestCheck:
    """Compare each stored `(domain, task id, trial index, record JSON)` of `run_id` with the
    digest castbench kept when it stored it."""
    digests: dict[str, str] = {}
    try:
        with _file(url).open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash: the trial's earlier or later line decides
                if isinstance(entry, dict) and entry.get("run") == run_id:
                    digests[str(entry.get("trial"))] = str(entry.get("sha256"))
    except OSError:
        pass
    changed: list[str] = []
    unknown = 0
    for domain, task_id, trial_index, record_json in stored:
        kept = digests.get(_key(domain, task_id, trial_index))
        if kept is None:
            unknown += 1
        elif kept != digest_of(record_json):
            changed.append(f"{domain} task {task_id} trial {trial_index}")
    return DigestCheck(changed, unknown)
