"""One background event loop per process, where every lean model call is awaited.

Trials run in the engine's threads and their agents are synchronous; a model call is a coroutine
submitted here and waited for. One loop with one connection pool per server keeps hundreds of
calls in flight at the cost of a few hundred microseconds of CPU each, where a synchronous
client per thread (litellm's path) spends several milliseconds and starts a loop per call.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from castbench.wakeup import Wakeup

__all__ = ["run_on_loop", "shared_loop"]

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


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


def run_on_loop(coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
    """Await `coroutine` on the shared loop from a synchronous thread; `TimeoutError` (and the
    coroutine cancelled) if it has not finished after `timeout` seconds: no call hangs a trial.

    The waiting thread sleeps on a bare lock (`Wakeup`) that the task's done-callback sets, not
    on a `concurrent.futures.Future`: a Future's Condition costs several times more CPU under the
    GIL, and every model call pays it (see `castbench.wakeup`)."""
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
