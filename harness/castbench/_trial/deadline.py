"""Waiting for an in-process agent with a deadline, and letting go of it.

A Python thread cannot be killed, so an agent call that overruns is *abandoned*: it goes on
running on its trial's daemon thread, its result is dropped, and the trial ends as `timeout`.
That is safe because all the agent can reach (its views, the trial's private copy of the
database) belongs to that trial alone, which is over; and a daemon thread never keeps the
process alive at exit. Agents in their own process are killed by their transport instead.

The same wait notices a run being interrupted (Ctrl-C): the trial is dropped, never stored half.
The interruption wakes the waits (`Halt`) rather than each wait polling for it: with hundreds of
trials in flight, polling woke a thread thousands of times a second for nothing, and each wake-up
is a turn at the GIL that the trials doing real work had to wait for.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from castbench._base.errors import AgentTimeout
from castbench._base.wakeup import Wakeup

__all__ = ["AgentThread", "Cancelled", "Halt", "TimeLimits"]

T = TypeVar("T")


class TimeLimits(BaseModel):
    """Wall-clock limits on agents. Generous by default: a step may hold several model calls
    (policy, critic rounds, user), each retried for minutes when a provider struggles."""

    step_s: float | None = Field(900.0, gt=0, description="seconds per step (all its agent calls)")
    trial_s: float | None = Field(3600.0, gt=0, description="seconds per trial")


class Cancelled(Exception):
    """The run is being interrupted: this trial is abandoned and not stored."""


class Halt(threading.Event):
    """A run's stop flag that also wakes every wait registered with it (`watch`)."""

    def __init__(self) -> None:
        super().__init__()
        self._watchers: set[Wakeup] = set()
        self._guard = threading.Lock()

    def set(self) -> None:
        with self._guard:
            super().set()
            watchers = list(self._watchers)
        for wakeup in watchers:
            wakeup.set()

    def watch(self, wakeup: Wakeup) -> None:
        """Set `wakeup` when the run halts (at once if it has)."""
        with self._guard:
            if self.is_set():
                wakeup.set()
            else:
                self._watchers.add(wakeup)

    def unwatch(self, wakeup: Wakeup) -> None:
        with self._guard:
            self._watchers.discard(wakeup)


class _Call:
    __slots__ = ("args", "done", "error", "finished", "fn", "value")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn, self.args = fn, args
        self.done = Wakeup()
        self.value: Any = None
        self.error: BaseException | None = None
        self.finished = False

    def run(self) -> None:
        try:
            self.value = self.fn(*self.args)
        except BaseException as exc:  # handed to the waiting trial, which decides whose fault it is
            self.error = exc
        self.finished = True
        self.done.set()


class _Worker:
    """A daemon thread running the calls put on its queue, one at a time, until it gets None."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while (job := self.jobs.get()) is not None:
            job.run()


_IDLE_KEPT = 1024
"""Idle workers kept for the next trials: starting a thread per trial cost more than its calls."""
_idle: list[_Worker] = []
_idle_lock = threading.Lock()


def _take_worker(name: str) -> _Worker:
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    worker = worker or _Worker()
    worker.thread.name = name
    return worker


def _give_back(worker: _Worker) -> None:
    with _idle_lock:
        if len(_idle) < _IDLE_KEPT:
            _idle.append(worker)
            return
    worker.jobs.put(None)


class AgentThread:
    """The daemon thread of one trial on which its agents' code runs, so the trial can stop
    waiting. Calls run one at a time, in order, as they would on the trial's own thread.

    The thread is taken from a pool of idle ones and given back when the trial ends, unless a
    call on it was abandoned (it may still be running): such a thread ends after that call."""

    def __init__(self, name: str, stop: Halt | None = None) -> None:
        self._name = name
        self._stop = stop
        self._worker: _Worker | None = None
        self._abandoned = False

    def call(self, fn: Callable[..., T], *args: Any, deadline: float | None = None, what: str = "") -> T:
        """`fn(*args)` on the agent thread; `AgentTimeout` once `deadline` (a `time.monotonic()`
        value) passes, `Cancelled` once the run's stop flag is set. `fn`'s own exception is
        re-raised here with its traceback."""
        if self._worker is None:
            self._worker = _take_worker(self._name)
        job = _Call(fn, args)
        if self._stop is not None:
            self._stop.watch(job.done)
        try:
            self._worker.jobs.put(job)
            if not job.done.wait(None if deadline is None else max(0.0, deadline - time.monotonic())):
                self._abandoned = True
                raise AgentTimeout(what)
        finally:
            if self._stop is not None:
                self._stop.unwatch(job.done)
        if not job.finished:  # woken by the run's halt
            self._abandoned = True
            raise Cancelled(f"run interrupted during {what}")
        if job.error is not None:
            raise job.error
        return job.value  # type: ignore[no-any-return]

    def close(self) -> None:
        """Give the thread back (or, after an abandoned call, let it end once that call does)."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        if self._abandoned:
            worker.jobs.put(None)
        else:
            _give_back(worker)
