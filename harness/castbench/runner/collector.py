"""Python's cyclic garbage collector, tuned while a run's trials run.

With hundreds of trials in flight the heap holds the domains' pristine databases, the tasks and
every trial's conversation and forked state, and a full collection walks all of it. At default
settings the collector ran every few hundred allocations and took a third of a model-bound run's
CPU (`bench/model_path.py`). For the run:

- everything alive when it starts (modules, domains, tasks: what every trial reads and none
  frees) moves to the permanent generation (`gc.freeze`), which no collection scans;
- the young generation is collected after `YOUNG_THRESHOLD` allocations rather than 700, so a
  collection runs a few times a second and finds the finished trials' cycles together.

Both are undone when the run ends. Nested or concurrent runs in one process share one tuning,
held until the last of them ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "tuned_for_a_run"]

YOUNG_THRESHOLD = 20_000
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
