"""Retrying model calls: which provider errors are worth another try, and how long to wait.

- rate limit (429): retried, waiting at least what the provider's Retry-After asks;
- transient (5xx, timeouts, dropped connections, an empty answer): retried with exponential
  backoff and full jitter;
- rejected (400, 413, 422: context length exceeded, an invalid request built from the model's own
  output): not retried; raised as `ProviderRejection`, the agent's failure (the trial scores 0);
- permanent (other 4xx, ...): not retried; the trial fails as an infrastructure error (the engine
  restarts it from its seed, then stores it as `error`);
- fatal (401/403 auth, 404 unknown model): not retried; nothing else in the run can succeed.

A server on this machine (llama.cpp on CPU) keeps computing a request its client gave up on, and
computes every request in turn: re-sending after a timeout would leave both running. So with
`resend_timeouts` off (`ModelSettings.local`) a timed-out call stops the run at once, naming the
`timeout` setting to raise, instead of piling duplicates onto the server.

litellm's and the OpenAI SDK's own retries are switched off by the client, so this is the only
retry loop and every retry is counted.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from typing import Literal, NamedTuple, TypeVar

import httpx
import openai
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt
from tenacity.stop import stop_base
from tenacity.wait import wait_random_exponential

from castbench._agents.models import loop
from castbench._base.errors import FatalInfrastructureError, InfrastructureError, ProviderRejection

__all__ = ["EmptyResponse", "ErrorKind", "RetryPolicy", "call_with_retries", "classify", "retry_after_s"]

T = TypeVar("T")
ErrorKind = Literal["rate_limit", "transient", "rejected", "permanent", "fatal"]

_RETRIED: frozenset[ErrorKind] = frozenset({"rate_limit", "transient"})
_TRANSIENT_STATUS = frozenset({408, 409, 425})
_REJECTED_STATUS = frozenset({400, 413, 422})
"""What the request itself got wrong: with the same conversation every retry gets the same answer."""


class EmptyResponse(RuntimeError):
    """The provider answered 200 with no choice in it: its failure, not the model's."""


class RetryPolicy(NamedTuple):
    max_attempts: int = 6
    max_call_s: float = 600.0
    backoff_s: float = 1.0
    backoff_max_s: float = 60.0
    resend_timeouts: bool = True
    """False for a server that keeps computing what its client abandoned (one on this machine)."""


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def classify(exc: BaseException) -> ErrorKind:
    if isinstance(exc, FatalInfrastructureError):  # decided already (a model server that is down)
        return "fatal"
    if isinstance(exc, EmptyResponse | TimeoutError | ConnectionError | httpx.TransportError):
        return "transient"
    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError):
        return "transient"  # litellm's Timeout and APIConnectionError derive from these
    status = _status(exc)
    if status is None:
        return "transient" if isinstance(exc, openai.APIError) else "permanent"
    if status == 429:
        return "rate_limit"
    if status in (401, 403, 404):
        return "fatal"
    if status >= 500 or status in _TRANSIENT_STATUS:
        return "transient"
    if status in _REJECTED_STATUS:
        return "rejected"
    return "permanent"


def _headers(exc: BaseException) -> dict[str, str]:
    headers: dict[str, str] = {}
    response_headers = getattr(getattr(exc, "response", None), "headers", None)
    litellm_headers = getattr(exc, "litellm_response_headers", None)
    for source in (response_headers, litellm_headers, getattr(exc, "headers", None)):
        if source:
            headers.update({str(key).lower(): str(value) for key, value in dict(source).items()})
    return headers


def retry_after_s(exc: BaseException) -> float | None:
    """The wait the provider asked for (`retry-after-ms`, `retry-after` in seconds or as a date)."""
    headers = _headers(exc)
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _wait(policy: RetryPolicy) -> Callable[[RetryCallState], float]:
    backoff = wait_random_exponential(multiplier=policy.backoff_s, max=policy.backoff_max_s)

    def wait(state: RetryCallState) -> float:
        delay = backoff(state)
        exc = state.outcome.exception() if state.outcome is not None else None
        asked = retry_after_s(exc) if exc is not None and classify(exc) == "rate_limit" else None
        return max(delay, asked) if asked is not None else delay

    return wait


class _StopBefore(stop_base):
    """tenacity's `stop_before_delay`, timed from the call's first attempt (made before tenacity
    starts, see `call_with_retries`)."""

    def __init__(self, max_s: float, started: float) -> None:
        self.max_s, self.started = max_s, started

    def __call__(self, retry_state: RetryCallState) -> bool:
        return time.monotonic() - self.started + (retry_state.upcoming_sleep or 0.0) >= self.max_s


def call_with_retries(fn: Callable[[], T], policy: RetryPolicy, describe: str) -> tuple[T, int]:
    """`fn()` and the number of retries it took; `InfrastructureError` once retrying must stop,
    `ProviderRejection` when the request itself was refused.

    The first attempt is made directly: nearly every call succeeds at once, and tenacity's
    bookkeeping cost more CPU than the rest of the call's own. Its failure is handed to tenacity
    as attempt 1 (not made again), so the retries, waits and limits are tenacity's as before."""
    started = time.monotonic()
    try:
        return fn(), 0
    except FatalInfrastructureError:
        raise
    except (TimeoutError, openai.APITimeoutError) as exc:  # litellm's Timeout derives from the latter
        if not policy.resend_timeouts:
            raise FatalInfrastructureError(
                f"{describe}: no answer within the attempt's timeout; not re-sent, since a server on "
                "this machine keeps computing the abandoned request: raise the model's `timeout` "
                "setting (seconds per attempt) or give it a shorter prompt, then re-run to resume"
            ) from exc
        failed: list[Exception] = [exc]
    except Exception as exc:
        failed = [exc]

    def attempt() -> T:
        if failed:
            raise failed.pop()
        return fn()

    retrying = Retrying(
        stop=stop_after_attempt(policy.max_attempts) | _StopBefore(policy.max_call_s, started),
        wait=_wait(policy),
        retry=retry_if_exception(
            lambda exc: (
                classify(exc) in _RETRIED
                and (policy.resend_timeouts or not isinstance(exc, TimeoutError | openai.APITimeoutError))
            )
        ),
        reraise=True,
        sleep=loop.sleep,  # on the loop, a backoff lets the other trials run
    )
    try:
        value = retrying(attempt)
    except FatalInfrastructureError:
        raise
    except Exception as exc:
        kind = classify(exc)
        attempts = retrying.statistics.get("attempt_number", 1)
        said = str(exc) or (  # aiohttp's and asyncio's timeouts say nothing of themselves
            "no answer within the attempt's timeout (the model's `timeout` setting)"
            if isinstance(exc, TimeoutError | openai.APITimeoutError)
            else "no message"
        )
        message = f"{describe}: {kind} error after {attempts} attempt(s): {type(exc).__name__}: {said}"
        if kind == "fatal":
            raise FatalInfrastructureError(message) from exc
        if kind == "rejected":
            raise ProviderRejection(message) from exc
        raise InfrastructureError(message) from exc
    return value, retrying.statistics.get("attempt_number", 1) - 1
