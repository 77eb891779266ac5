"""Group commit: a run's finished trials written by a thread of their own, those that finished
while the previous commit was under way together, in one transaction.

Why: a commit per trial cost the engine's thread about 0.3 ms of CPU and 0.6-1 ms of wall time
per trial (a transaction, a WAL write, a digest line appended: `bench/profile_whole_command.py`),
in the thread that hands the executor its next trials; at 512 trials in flight against a model
answering in 0.5 s that is a thousand transactions a second. Grouped, the transaction and the
digest write are shared by every trial of a batch (0.14 ms of CPU per trial at 64 a batch).

The window: a trial is committed at most `GATHER_S` seconds after the engine hands it over, plus
the previous batch's commit and its streamed summary cells (`castbench._results.report.streamed`, about
0.5 ms a trial) and its own commit (`COMMIT_MOST` trials at most a batch): well under a second.
A process killed outright (SIGKILL, power lost) loses the trials finished in that window besides
those in flight; they are not stored, so re-running the command runs exactly those again (a
resume plans every trial without a scored row), and none is stored twice. Ctrl-C, a fatal
provider error or any other error the engine sees first commits every trial handed over (`close`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from queue import Empty, SimpleQueue

from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord

__all__ = ["COMMIT_MOST", "GATHER_S", "Commits"]

GATHER_S = 0.05
"""Seconds the writer waits, after the first trial of a batch, for others to join it."""
COMMIT_MOST = 256
"""Trials one transaction takes at most."""

Unwritable = Callable[[TrialRecord, Exception], TrialRecord]


class Commits:
    """The writer of one run's trials: `add` hands a finished trial over (it returns at once),
    `close` commits whatever was handed over and ends the writer, raising any error the store
    raised (which `add` raises too, once seen). `on_stored` hears each record as stored (from the
    writer's thread), `unwritable` replaces one that cannot be written (`ResultsStore.add_trials`)."""

    def __init__(
        self,
        store: ResultsStore,
        run_id: str,
        unwritable: Unwritable,
        on_stored: Callable[[TrialRecord], None] | None = None,
        gather_s: float | None = None,
        most: int | None = None,
    ) -> None:
        self._store, self._run_id, self._unwritable, self._on_stored = store, run_id, unwritable, on_stored
        self._gather_s = GATHER_S if gather_s is None else gather_s
        self._most = COMMIT_MOST if most is None else most
        self._queue: SimpleQueue[TrialRecord | None] = SimpleQueue()
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._write, name=f"commits-{run_id}", daemon=True)
        self._thread.start()

    def add(self, record: TrialRecord) -> None:
        self._raise()
        self._queue.put(record)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _write(self) -> None:
        last = False
        while not last:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            ends = time.monotonic() + self._gather_s
            while len(batch) < self._most:
                try:
                    following = self._queue.get(timeout=max(0.0, ends - time.monotonic()))
                except Empty:
                    break
                if following is None:
                    last = True
                    break
                batch.append(following)
            try:
                stored = self._store.add_trials(self._run_id, batch, self._unwritable)
                if self._on_stored is not None:
                    for record in stored:
                        if record is not None:
                            self._on_stored(record)
            except BaseException as exc:  # the engine's thread raises it (at its next add, or close)
                self._error = exc
                return
