"""One worker's share of a run in a shared store: trials come from claims, not from a fixed list.

`castbench eval` on a Postgres store runs this in every process given the run: each claims the
next trial nobody holds, runs it, stores it and marks its claim done, while a heartbeat thread
renews its leases. When nothing is left to claim it waits for the trials other workers hold, and
takes them over if their leases run out (a worker died). It stops when every trial of the plan
is settled, so whichever worker finishes last has seen the whole run through.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from castbench._records.store import ResultsStore
from castbench._records.store.leases import Leases, TrialKey
from castbench._records.trial import TrialRecord

J = TypeVar("J")

__all__ = ["SharedPlan"]


class SharedPlan(Generic[J]):
    """`jobs` are this run's unstored trials, `key` names each as (domain, task id, trial index)."""

    def __init__(
        self, store: ResultsStore, run_id: str, jobs: list[J], key: Callable[[J], TrialKey], lease_s: float
    ):
        self.jobs = jobs
        self.keys = [key(job) for job in jobs]
        self.leases = Leases(store.db, run_id, lease_s)
        self.done = 0
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="castbench-lease", daemon=True)

    def __enter__(self) -> SharedPlan:
        self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._beat.join()
        self.leases.leave(self.done)

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.leases.lease_s / 3):
            try:
                self.leases.renew(self.done)
            except Exception:  # a lost connection: the next beat tries again; the lease has slack
                continue

    def claimed(self) -> Iterator[J]:
        """The jobs this worker claims, one at a time as they are asked for; ends when nothing
        is claimable right now."""
        settled = self.leases.settled()
        for job, key in zip(self.jobs, self.keys, strict=True):
            if key not in settled and self.leases.claim(key):
                yield job

    def finish(self, record: TrialRecord) -> None:
        self.leases.finish((record.domain, record.task_id, record.trial_index))
        self.done += 1

    def settled(self) -> bool:
        """Every trial of the plan is scored or was tried in this pass."""
        return self.leases.settled().issuperset(self.keys)

    def wait(self) -> None:
        """Pause before looking again for trials whose workers died."""
        time.sleep(min(1.0, self.leases.lease_s / 4))
