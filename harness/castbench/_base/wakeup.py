"""A one-shot wake-up between threads on a bare lock.

`threading.Event` and `concurrent.futures.Future` wait through a `Condition`: Python code that
allocates a lock per wait and runs under the GIL on both sides. Each model call crosses threads
several times (trial -> agent thread -> model loop and back), so with hundreds of trials in flight
that bookkeeping became a large share of the harness's CPU and of the GIL's queue. A lock that
starts held and is released once does the same job in C.
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["Wakeup"]


class Wakeup:
    """Starts unset; `set` (any thread, any number of times) wakes the one waiter for good."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()

    def set(self) -> None:
        with contextlib.suppress(RuntimeError):  # already set (the call finished as the run halted)
            self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        """True once set; False if `timeout` seconds passed first. Stays set after it returns."""
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self.set()  # stays set (a second `set` may have come in between: nothing to undo then)
        return True
