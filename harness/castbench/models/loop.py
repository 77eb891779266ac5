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

__all__ = ["run_on_loop", "shared_loop"]

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def shared_loop() -> asyncio.AbstractEventLoop:
    """The process's model-call loop, started on first use in a daemon thread."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="castbench-models", daemon=True).start()
            _loop = loop
        return _loop


def run_on_loop(coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
    """Await `coroutine` on the shared loop from a synchronous thread; `TimeoutError` (and the
    coroutine cancelled) if it has not finished after `timeout` seconds: no call hangs a trial."""
    future = asyncio.run_coroutine_threadsafe(coroutine, shared_loop())
    try:
        return future.result(timeout)
    except TimeoutError:
        future.cancel()
        raise
    except BaseException:
        future.cancel()  # e.g. KeyboardInterrupt in the waiting thread
        raise


def at_exit(cleanup: Coroutine[Any, Any, None]) -> None:
    """Run `cleanup` on the loop when the process exits (closing connection pools)."""

    def close() -> None:
        if _loop is not None and _loop.is_running():
            with contextlib.suppress(Exception):  # the process is ending: nothing left to report to
                asyncio.run_coroutine_threadsafe(cleanup, _loop).result(2.0)
        else:
            cleanup.close()

    atexit.register(close)
