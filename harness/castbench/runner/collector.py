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
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "tuned_for_a_run"]

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
