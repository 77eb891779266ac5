"""Failing fast when a model server is down.

Retries are right for a server that struggles, wrong for one that is not there: a closed port
answers every attempt of every trial the same way, and a run of hundreds of trials would spend
hours failing. So each server (its `api_base`, or the provider for hosted models) has one circuit
breaker, shared by every role and trial in the process:

- a connection that cannot be made (refused, reset, unresolvable, not established in time)
  counts; an answer of any kind (even an HTTP error: the server is up) resets the count;
- after `THRESHOLD` such failures in a row, across trials, the breaker opens and every call to
  that server fails at once with `ServerDown`, a fatal infrastructure error: the run stops as
  `failed`, finished trials kept, and the message says which server and how to resume.

With the default backoff (1 s doubling, full jitter) the first call's six attempts open it in
at most 31 s. Before a run's first trial, `check_server` makes one cheap request to each server.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

from castbench._base.errors import ServerDown

__all__ = [
    "SERVICE_HINT",
    "SERVICE_LABEL",
    "THRESHOLD",
    "ServerDown",
    "check_server",
    "check_service",
    "counted",
    "guard",
    "is_connection_failure",
    "record",
]

T = TypeVar("T")

THRESHOLD = 6
RESUME = "start it (or fix --api-base), then re-run the same command to resume"


@dataclass
class _State:
    failures: int = 0
    down: str | None = None
    """Why the breaker opened; None while closed."""


_states: dict[str, _State] = {}
_lock = threading.Lock()

_CONNECTION_FAILURES = (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError, socket.gaierror)


def is_connection_failure(exc: BaseException) -> bool:
    """Whether `exc` (or what it wraps: litellm reports a refused connection as a 500) means no
    connection to the server could be made. A slow answer is not one: the server is there."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, _CONNECTION_FAILURES):
            return True
        pending += [current.__cause__, current.__context__]
    return False


def guard(server: str) -> None:
    """Raise `ServerDown` at once when the server's breaker is open."""
    with _lock:
        state = _states.get(server)
        reason = state.down if state is not None else None
    if reason is not None:
        raise ServerDown(reason)


def record(
    server: str, failure: BaseException | None, label: str = "model server", hint: str = RESUME
) -> None:
    """Count one attempt's outcome: `None` for an answer, else the exception it raised. Raises
    `ServerDown` when this failure opens the breaker; its message names the `label`led server
    (an agent service has a breaker of its own kind) and ends with the `hint`."""
    if failure is not None and not is_connection_failure(failure):
        failure = None  # the server answered (an HTTP error, a bad body): it is up
    with _lock:
        state = _states.setdefault(server, _State())
        if failure is None:
            state.failures = 0
            return
        state.failures += 1
        if state.failures < THRESHOLD and state.down is None:
            return
        last = str(failure).splitlines()[0] if str(failure) else type(failure).__name__
        state.down = state.down or (
            f"{label} {server} is down: {state.failures} connection failures in a row "
            f"across trials (last: {last}); {hint}"
        )
        reason = state.down
    raise ServerDown(reason) from failure


def counted(
    server: str, attempt: Callable[[], T], label: str = "model server", hint: str = RESUME
) -> Callable[[], T]:
    """`attempt` (one try of a call to the server) guarded and counted by the server's breaker."""

    def run() -> T:
        guard(server)
        try:
            value = attempt()
        except Exception as exc:
            record(server, exc, label, hint)  # raises ServerDown once the server is given up on
            raise
        record(server, None, label, hint)
        return value

    return run


def check_server(
    api_base: str,
    role: str,
    timeout_s: float = 5.0,
    *,
    label: str = "model server",
    path: str = "/models",
    hint: str = RESUME,
) -> None:
    """One cheap request (`GET {api_base}{path}`) before the first trial: `ServerDown` when no
    connection can be made. Any answer, even 401 or 404, means the server is there; it also
    closes a breaker a previous run in this process left open."""
    try:
        httpx.get(api_base.rstrip("/") + path, timeout=timeout_s)
    except httpx.HTTPError as exc:
        if is_connection_failure(exc):
            message = f"{label} {api_base} for the {role} is not reachable ({exc}); {hint}"
            raise ServerDown(message) from exc
    with _lock:
        _states.pop(api_base, None)


SERVICE_LABEL = "agent service"
SERVICE_HINT = "start it (or fix the URL), then re-run the same command to resume"


def check_service(url: str, role: str) -> None:
    """One request to an agent service before the run's first trial (any HTTP answer means it is
    there): `ServerDown`, one line, when nothing answers, instead of a run of unscored trials."""
    check_server(url.rstrip("/"), role, label=SERVICE_LABEL, path="/", hint=SERVICE_HINT)
