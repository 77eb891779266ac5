"""How many calls may be in flight at one model server at once.

One semaphore per `api_base + model` and limit, shared by every role and trial in the process: a
policy and a critic on the same server share its capacity, while two different servers do not
wait for each other. The limit is part of the key so that runs one after another in a process
(with another `--concurrency`, hence another default limit) each get the limit they asked for.
"""

from __future__ import annotations

import asyncio
import threading

__all__ = ["loop_slot", "slot"]

_slots: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_loop_slots: dict[tuple[str, int], asyncio.Semaphore] = {}
"""The lean client's, touched only on the shared loop's thread."""
_lock = threading.Lock()


def slot(key: str, limit: int) -> threading.BoundedSemaphore:
    """The semaphore for `key`; use it as `with slot(key, limit): ...` around one attempt."""
    with _lock:
        semaphore = _slots.get((key, limit))
        if semaphore is None:
            semaphore = _slots[(key, limit)] = threading.BoundedSemaphore(limit)
        return semaphore


def loop_slot(key: str, limit: int) -> asyncio.Semaphore:
    """The semaphore for `key` of calls awaited on the shared loop (the lean client): `async with
    loop_slot(key, limit): ...`. A thread's semaphore would block the loop, and with it every
    trial that runs there, while a call waits for a slot."""
    semaphore = _loop_slots.get((key, limit))
    if semaphore is None:
        semaphore = _loop_slots[(key, limit)] = asyncio.Semaphore(limit)
    return semaphore
