"""One event loop per process, where every lean model call is awaited, and where trials whose
agents never block run as greenlets.

A model call is a coroutine (`castbench._agents.models.compat`). Synchronous code waits for one with
`wait_for`, which works from either side:

- from a thread (a trial on the engine's thread pool, an agent thread, a trainer): the coroutine
  is submitted to the loop and the thread sleeps until it is done;
- from a greenlet the loop runs (`run_sync`, `LoopCalls`): the greenlet switches back to the loop,
  which awaits the coroutine and switches in again with its result.

The second way is how a model-bound run keeps hundreds of trials in flight on a couple of cores.
A trial whose agents are castbench's scripted ones or models on the lean client is ordinary
synchronous code (the same `Episode` every driver steps), run in its own greenlet on the loop's
thread: a model call costs a greenlet switch and an await, where on a thread it cost four thread
switches under the GIL, each a turn in the GIL's queue behind hundreds of other trials. Code that
may block (an import-path agent, litellm's synchronous client, a store) must not run on the loop;
`blocking` moves such a call to a thread when it finds itself there.

A greenlet waits under a deadline (`deadline`): the trial's step and trial time limits. When it
passes, `DeadlinePassed` is raised where the greenlet waits, and when the run is interrupted its
task is cancelled and `asyncio.CancelledError` is raised there; both are `BaseException`s, so no
retry loop or `except Exception` on the way up mistakes them for the call's own failure.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from typing import Any, NamedTuple, TypeVar

import greenlet

from castbench._base.wakeup import Wakeup

__all__ = [
    "DeadlinePassed",
    "LoopCalls",
    "blocking",
    "deadline",
    "on_loop",
    "run_sync",
    "shared_loop",
    "sleep",
    "wait_for",
]

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


class DeadlinePassed(BaseException):
    """The deadline a greenlet runs under (`deadline`) passed while it waited."""


class _OnLoop(greenlet.greenlet):  # type: ignore[misc]
    """A synchronous call run by the loop (`run_sync`); `deadline` bounds its waits."""

    deadline: float | None = None


class _Await(NamedTuple):
    """What a greenlet hands the loop to await for it."""

    coroutine: Coroutine[Any, Any, Any]
    timeout: float | None


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def shared_loop() -> asyncio.AbstractEventLoop:
    """The process's model-call loop, started on first use in a daemon thread."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = _new_loop()
            threading.Thread(target=loop.run_forever, name="castbench-models", daemon=True).start()
            _loop = loop
        return _loop


def on_loop() -> bool:
    """Whether this code runs in a greenlet on the loop (where it must not block)."""
    return isinstance(greenlet.getcurrent(), _OnLoop)


def wait_for(coroutine: Coroutine[Any, Any, T], timeout: float | None) -> T:
    """Await `coroutine` on the shared loop from synchronous code; `TimeoutError` (and the
    coroutine cancelled) if it has not finished after `timeout` seconds: no call hangs a trial.
    On the loop, `DeadlinePassed` once the greenlet's deadline passes first."""
    current = greenlet.getcurrent()
    if isinstance(current, _OnLoop):
        return current.parent.switch(_Await(coroutine, timeout))  # type: ignore[no-any-return]
    return _from_thread(coroutine, timeout)


def sleep(seconds: float) -> None:
    """`time.sleep` that lets the loop run other trials meanwhile when called on it."""
    if on_loop():
        wait_for(asyncio.sleep(seconds), None)
    else:
        time.sleep(seconds)


def blocking(fn: Callable[[], T]) -> T:
    """`fn()`, moved to a thread when called on the loop: code that blocks (a synchronous client)
    must not stall every trial the loop runs."""
    if on_loop():
        return wait_for(asyncio.to_thread(fn), None)
    return fn()


@contextlib.contextmanager
def deadline(when: float | None) -> Iterator[None]:
    """Bound this greenlet's waits by `when` (a `time.monotonic()` value) until the block ends."""
    current = greenlet.getcurrent()
    if not isinstance(current, _OnLoop):
        raise RuntimeError("deadline() is for code running on the loop (run_sync)")
    before, current.deadline = current.deadline, when
    try:
        yield
    finally:
        current.deadline = before


async def run_sync(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a greenlet of its own on this loop: every `wait_for` in it becomes an await
    here, so other coroutines and greenlets run meanwhile. The task's cancellation is raised in
    `fn` where it waits, so it unwinds (its `finally` blocks run) before the task ends."""
    child = _OnLoop(fn)
    request = child.switch(*args)
    while not child.dead:
        try:
            value = await _bounded(request, child.deadline)
        except BaseException as exc:  # the call's failure, the deadline or the task's cancellation
            request = child.throw(exc)
        else:
            request = child.switch(value)
    return request  # type: ignore[no-any-return]


async def _bounded(request: _Await, when: float | None) -> Any:
    timeout, overrun = request.timeout, False
    if when is not None:
        left = max(0.0, when - time.monotonic())
        if timeout is None or left < timeout:
            timeout, overrun = left, True
    if timeout is None:
        return await request.coroutine
    try:
        async with asyncio.timeout(timeout) as scope:
            return await request.coroutine
    except TimeoutError:
        if not scope.expired():  # the coroutine's own timeout
            raise
        if overrun:
            raise DeadlinePassed from None
        raise TimeoutError(f"no answer within {timeout:g} s") from None


class LoopCalls:
    """Synchronous calls run concurrently on the shared loop, one greenlet each (`run_sync`), at
    most `limit` at once: `submit` and `shutdown` as a thread pool of `limit` threads has them,
    for an executor to use instead of one."""

    def __init__(self, limit: int) -> None:
        self._loop = shared_loop()
        self._limit = limit
        self._slots: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._slots is None:  # made on the loop's thread
            self._slots = asyncio.Semaphore(self._limit)
        async with self._slots:
            return await run_sync(fn, *args)

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        future: Future[T] = Future()

        def start() -> None:
            task = self._loop.create_task(self._run(fn, *args))
            self._tasks.add(task)
            task.add_done_callback(lambda done: self._settle(done, future))

        self._loop.call_soon_threadsafe(start)
        return future

    def _settle(self, task: asyncio.Task[T], future: Future[T]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            future.cancel()
        elif (error := task.exception()) is not None:
            future.set_exception(error)
        else:
            future.set_result(task.result())

    def shutdown(self, cancel: bool = False) -> None:
        """Wait for every call to end; `cancel`: cancel them first (each unwinds where it waits)."""

        async def finish() -> None:
            tasks = list(self._tasks)
            if cancel:
                for task in tasks:
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(finish(), self._loop).result()


def _from_thread(coroutine: Coroutine[Any, Any, T], timeout: float | None) -> T:
    """The thread side of `wait_for`. The waiting thread sleeps on a bare lock (`Wakeup`) that the
    task's done-callback sets, not on a `concurrent.futures.Future`: a Future's Condition costs
    several times more CPU under the GIL (see `castbench._base.wakeup`)."""
    loop = shared_loop()
    done = Wakeup()
    started: list[asyncio.Task[T]] = []

    def start() -> None:
        task = loop.create_task(coroutine)
        task.add_done_callback(lambda _: done.set())
        started.append(task)

    loop.call_soon_threadsafe(start)
    try:
        finished = done.wait(timeout)
    except BaseException:  # e.g. KeyboardInterrupt in the waiting thread
        loop.call_soon_threadsafe(_cancel, started)
        raise
    if not finished:
        loop.call_soon_threadsafe(_cancel, started)
        raise TimeoutError(f"no answer within {timeout:g} s")
    return started[0].result()


def _cancel(started: list[asyncio.Task[Any]]) -> None:
    for task in started:
        task.cancel()


def at_exit(cleanup: Coroutine[Any, Any, None]) -> None:
    """Run `cleanup` on the loop when the process exits (closing connection pools)."""

    def close() -> None:
        if _loop is not None and _loop.is_running():
            with contextlib.suppress(Exception):  # the process is ending: nothing left to report to
                asyncio.run_coroutine_threadsafe(cleanup, _loop).result(2.0)
        else:
            cleanup.close()

    atexit.register(close)
