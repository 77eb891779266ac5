"""Trials started and never stored: castbench's death on the record (issue 56).

A run resumes by playing again every trial its store does not hold. Were that all, a process
that killed castbench while a trial was going badly (or a machine that lost it) would have that
trial played again as a first attempt: a re-roll nobody sees. So before a trial starts, the
engine appends it to a journal kept outside the store, in castbench's state folder (per store
and run; an append per trial, no `fsync`: what a killed process wrote is in the kernel's page
cache and survives it), and appends again when it is stored. When castbench stops the run itself
(Ctrl-C, a fatal error, a cost limit) it marks the trials it abandoned as such. A trial started
by a process that then vanished has neither: on resume, the record stored for it counts each
such start as an attempt (`attempts`) with `LOST` in `retried_for`, shown by `castbench runs
show`; boards and `castbench gate` treat such runs as they treat retries an agent could have
caused (`lost_trials`).

The journal is per machine (a shared Postgres store's other machines keep their own); a
journal that cannot be written (a read-only state folder) leaves the run as it was before,
with a warning.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import Counter
from contextlib import suppress
from typing import TextIO

from castbench._base.places import state_dir
from castbench._records.trial import TrialRecord

__all__ = ["LOST", "Journal", "is_lost"]

LOST = "castbench stopped during this try without storing it (its process was killed or lost)"
"""The `retried_for` entry of each try a vanished castbench process started and never stored."""

Key = tuple[str, str, int]


def is_lost(reason: str) -> bool:
    return reason.startswith(LOST[:40])


def _line(kind: str, key: Key) -> str:
    domain, task, index = key
    return f"{kind}\t{domain}\t{task}\t{index}\n"


class Journal:
    """The journal of one run in one store, opened by the process that plays its trials."""

    def __init__(self, store_url: str, run_id: str) -> None:
        digest = hashlib.sha256(f"{store_url}\0{run_id}".encode()).hexdigest()[:24]
        self.path = os.path.join(state_dir(), "journal", f"{digest}.log")
        self._lock = threading.Lock()
        self._open: Counter[Key] = Counter()
        self.lost: Counter[Key] = self._read()
        """Starts of earlier processes that were neither stored nor abandoned, per trial."""
        self._handle: TextIO | None = None
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self._handle = open(self.path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        except OSError:
            self._handle = None

    def _read(self) -> Counter[Key]:
        started: Counter[Key] = Counter()
        try:
            with open(self.path, encoding="utf-8") as handle:
                for line in handle:
                    kind, _, rest = line.rstrip("\n").partition("\t")
                    domain, _, rest = rest.partition("\t")
                    task, _, index = rest.partition("\t")
                    if not index.isdigit():
                        continue  # a line cut by the kill
                    key = (domain, task, int(index))
                    if kind == "S":
                        started[key] += 1
                    elif kind in ("D", "A") and started[key] > 0:
                        started[key] -= 1
        except OSError:
            pass
        return +started

    def _write(self, text: str) -> None:
        if self._handle is not None:
            with suppress(OSError):
                self._handle.write(text)

    def started(self, key: Key) -> None:
        """Before the trial `key` starts."""
        with self._lock:
            self._open[key] += 1
            self._write(_line("S", key))

    def charge(self, record: TrialRecord) -> TrialRecord:
        """The record with the lost starts of its trial counted in (once: they are marked done)."""
        key = (record.domain, record.task_id, record.trial_index)
        with self._lock:
            lost = self.lost.pop(key, 0)
            if not lost:
                return record
            self._write(_line("D", key) * lost)
        return record.model_copy(
            update={"attempts": record.attempts + lost, "retried_for": [*[LOST] * lost, *record.retried_for]}
        )

    def stored(self, record: TrialRecord) -> None:
        key = (record.domain, record.task_id, record.trial_index)
        with self._lock:
            if self._open[key] > 0:
                self._open[key] -= 1
                self._write(_line("D", key))

    def abandon(self) -> None:
        """castbench stops the run itself: the trials in flight are its to play again, unmarked."""
        with self._lock:
            for key, count in (+self._open).items():
                self._write(_line("A", key) * count)
            self._open.clear()

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                with suppress(OSError):
                    self._handle.close()
                self._handle = None
