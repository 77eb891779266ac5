"""Python's cyclic garbage collector, tuned while a run's trials run.

With hundreds of trials in flight the heap holds the domains' pristine databases, the tasks and
every trial's conversation and forked state, and a full collection walks all of it. At default
settings the collector ran every few hundred allocations and took a third of a model-bound run's
CPU (`bench/model_path.py`). For the run:

- everything alive when it starts (modules, domains, tasks: what every trial reads and none
  frees) moves to the permanent generation (`gc.freeze`), which no collection scans;
- the young generation is collected once `YOUNG_THRESHOLD` more objects are alive than at the
  last collection, rather than 700. Most of a trial's objects are freed by reference counting
  long before that, so collections become rare; each one walks the young objects alive, so their
  number times the count of collections is what the collector costs (measured at 256 trials in
  flight: 0.4 s of CPU in a 15 s run at 20,000, 0.1 s at 100,000; a few MB of cyclic garbage
  waits a little longer to be freed).

Both are undone when the run ends. Nested or concurrent runs in one process share one tuning,
held until the last of them ends.

A command that has run trials then exits with a heap of hundreds of thousands of objects, and the
interpreter's last collection walked all of them: 0.6-0.8 s of the 1.2-1.7 s between a run's last
model answer and the process's exit (`bench/whole_command_latency.py`, C=128 and 256).
`skip_collection_at_exit` freezes the heap as the very last exit handler, so that collection
finds nothing to scan; objects are still freed and every other exit handler still runs.
"""

from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "skip_collection_at_exit", "tuned_for_a_run"]

YOUNG_THRESHOLD = 100_000
_held = 0
_before: tuple[int, int, int] | None = None
_lock = threading.Lock()


@contextmanager
def tuned_for_a_run() -> Iterator[None]:
    global _held, _before
    with _lock:
        if _held == 0:
            _before = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(max(_before[0], YOUNG_THRESHOLD), _before[1], _before[2])
        _held += 1
    try:
        yield
    finally:
        with _lock:
            _held -= 1
            if _held == 0 and _before is not None:
                gc.set_threshold(*_before)
                gc.unfreeze()


_exit_registered = False


def skip_collection_at_exit() -> None:
    """Freeze the heap (`gc.freeze`) when the process exits, after every exit handler registered
    later (they run first: `atexit` is last in, first out), so that the interpreter's final
    collection scans nothing. What it would have found is cyclic garbage the exiting process frees
    anyway; a cycle holding an open file or connection is not closed by it (nothing promises that
    at exit). Once per process."""
    global _exit_registered
    with _lock:
        if _exit_registered:
            return
        _exit_registered = True
    atexit.register(gc.freeze)
