"""Provider errors through both model paths (the lean client for OpenAI-compatible servers, and
litellm for the rest, here its `custom_openai` provider): rate limits wait as asked, transient
errors are retried with backoff, permanent and auth errors are not, and every call is bounded."""

from __future__ import annotations

import time
from collections.abc import Callable
from email.utils import formatdate
from types import SimpleNamespace

import pytest

from castbench._agents.models.client import ModelClient, TrialKey
from castbench._agents.models.retry import RetryPolicy, call_with_retries, classify, retry_after_s
from castbench._agents.models.settings import ModelSettings
from castbench._base.errors import FatalInfrastructureError, InfrastructureError, ProviderRejection
from tests.models.conftest import litellm_path_key as _key
from tests.models.fault_server import FaultServer

HELLO = [{"role": "user", "content": "hello"}]


def _echo(body: dict[str, object]) -> dict[str, object]:
    return {"content": "hi"}


PATHS = pytest.mark.parametrize("path", ["openai/echo", "custom_openai/echo"], ids=["lean", "litellm"])


def _client(server: FaultServer, path: str, **settings: object) -> ModelClient:
    defaults = {
        "timeout": 0.3,
        "resend_timeouts": True,
        "backoff_s": 0.01,
        "backoff_max_s": 0.02,
        "max_attempts": 3,
    }
    model = ModelSettings(model=path, api_base=server.base_url, **_key(path), **{**defaults, **settings})  # type: ignore[arg-type]
    return ModelClient(model, "policy", TrialKey(seed=1, trial_index=0))


def _raised(server: FaultServer, path: str, **settings: object) -> BaseException:
    with pytest.raises((InfrastructureError, ProviderRejection)) as caught:
        _client(server, path, **settings).complete(HELLO)
    assert caught.value.__cause__ is not None
    return caught.value.__cause__


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("rate_limit", "rate_limit"),
        ("server_error", "transient"),
        ("slow", "transient"),
        ("empty", "transient"),
        ("bad_request", "rejected"),
        ("context_length", "rejected"),
        ("unauthorized", "fatal"),
    ],
)
@PATHS
def test_provider_errors_are_classified(
    path: str, fault_server: Callable[..., FaultServer], fault: str, kind: str
) -> None:
    server = fault_server(_echo, rates={fault: 1.0})
    assert classify(_raised(server, path)) == kind


@pytest.mark.parametrize(
    ("fault", "requests"), [("server_error", 3), ("slow", 3), ("empty", 3), ("rate_limit", 3)]
)
@PATHS
def test_retryable_errors_are_retried_then_reported(
    path: str, fault_server: Callable[..., FaultServer], fault: str, requests: int
) -> None:
    server = fault_server(_echo, rates={fault: 1.0})
    with pytest.raises(InfrastructureError, match="after 3 attempt"):
        _client(server, path).complete(HELLO)
    assert server.requests == requests  # litellm's and the OpenAI SDK's own retries are off


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("bad_request", ProviderRejection),
        ("context_length", ProviderRejection),
        ("unauthorized", FatalInfrastructureError),
    ],
)
@PATHS
def test_permanent_and_auth_errors_fail_fast(
    path: str, fault_server: Callable[..., FaultServer], fault: str, error: type[Exception]
) -> None:
    server = fault_server(_echo, rates={fault: 1.0})
    with pytest.raises(error, match="after 1 attempt"):
        _client(server, path, max_attempts=6).complete(HELLO)
    assert server.requests == 1


@PATHS
def test_retry_after_is_honoured(path: str, fault_server: Callable[..., FaultServer]) -> None:
    server = fault_server(_echo, rates={"rate_limit": 1.0}, retry_after_ms=300)
    started = time.perf_counter()
    with pytest.raises(InfrastructureError):
        _client(server, path, max_attempts=2).complete(HELLO)
    assert time.perf_counter() - started >= 0.3  # backoff alone would wait 0.02 s


@PATHS
def test_a_call_is_bounded_in_total_time(path: str, fault_server: Callable[..., FaultServer]) -> None:
    """`max_call_s` ends the retries long before `max_attempts`: every attempt waits out the 0.2 s
    timeout, so at most 4 of the 100 allowed fit in 0.7 s (fewer on a slow machine)."""
    server = fault_server(_echo, rates={"slow": 1.0})
    with pytest.raises(InfrastructureError, match=r"after \d attempt\(s\)") as caught:
        _client(server, path, timeout=0.2, max_attempts=100, max_call_s=0.7).complete(HELLO)
    assert 1 <= server.requests <= 4
    assert f"after {server.requests} attempt(s)" in str(caught.value)


@PATHS
def test_retries_are_counted_in_usage(path: str, fault_server: Callable[..., FaultServer]) -> None:
    server = fault_server(_echo, fail_first=2)
    completion = _client(server, path).complete(HELLO)
    assert completion.text == "hi" and completion.usage.retries == 2 and completion.usage.calls == 1


def test_retry_after_headers() -> None:
    def error(headers: dict[str, str]) -> BaseException:
        exc = RuntimeError("429")
        exc.response = SimpleNamespace(headers=headers)  # type: ignore[attr-defined]
        return exc

    assert retry_after_s(error({"retry-after-ms": "1500"})) == 1.5
    assert retry_after_s(error({"Retry-After": "7"})) == 7.0
    in_a_minute = retry_after_s(error({"Retry-After": formatdate(time.time() + 60, usegmt=True)}))
    assert in_a_minute is not None and 55 < in_a_minute <= 60
    assert retry_after_s(error({})) is None
    assert retry_after_s(error({"Retry-After": "soon"})) is None


def test_call_with_retries_stops_on_what_cannot_be_cured() -> None:
    calls = []

    def broken() -> None:
        calls.append(1)
        raise ValueError("a bug, not an outage")

    with pytest.raises(InfrastructureError, match="permanent error after 1 attempt"):
        call_with_retries(broken, RetryPolicy(max_attempts=5, backoff_s=0), "test")
    assert len(calls) == 1
