"""The client's cache, concurrency limit, provider seeds and cost accounting."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from castbench._agents.models.client import ModelClient, TrialKey
from castbench._agents.models.settings import ModelSettings
from tests.models.conftest import litellm_path_key as _key
from tests.models.fault_server import FaultServer

HELLO = [{"role": "user", "content": "hello"}]


def _echo(body: dict[str, Any]) -> dict[str, Any]:
    return {"content": f"seed {body.get('seed')}"}


FIRST_TRIAL = TrialKey(1, 0)


PATHS = pytest.mark.parametrize("path", ["openai/echo", "custom_openai/echo"], ids=["lean", "litellm"])


def _client(
    server: FaultServer,
    trial: TrialKey = FIRST_TRIAL,
    role: str = "policy",
    path: str = "openai/echo",
    **settings: Any,
) -> ModelClient:
    return ModelClient(
        ModelSettings(model=path, api_base=server.base_url, **_key(path), **settings), role, trial
    )


def test_the_cache_answers_repeats_but_never_merges_trials(
    fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    server = fault_server(_echo)
    first = _client(server, TrialKey(11, 0), cache_dir=str(tmp_path)).complete(HELLO)
    second = _client(server, TrialKey(12, 1), cache_dir=str(tmp_path)).complete(HELLO)
    assert server.requests == 2  # two trials, two samples
    again = _client(server, TrialKey(11, 0), cache_dir=str(tmp_path)).complete(HELLO)
    assert server.requests == 2 and again.text == first.text and again.usage.cost == 0.0
    _client(server, TrialKey(11, 0), role="critic", cache_dir=str(tmp_path)).complete(HELLO)
    _client(server, TrialKey(11, 0), cache_dir=str(tmp_path), temperature=0.5).complete(HELLO)
    assert server.requests == 4  # another role, other settings: other answers
    assert second.usage.input_tokens > 0


def test_no_cache_by_default(fault_server: Callable[..., FaultServer]) -> None:
    server = fault_server(_echo)
    for _ in range(2):
        _client(server).complete(HELLO)
    assert server.requests == 2


def test_provider_seeds_differ_per_trial_and_repeat_per_trial(
    fault_server: Callable[..., FaultServer],
) -> None:
    server = fault_server(_echo)
    a = _client(server, TrialKey(11, 0), seed=1).complete(HELLO).text
    b = _client(server, TrialKey(12, 1), seed=1).complete(HELLO).text
    assert a != b and a == _client(server, TrialKey(11, 0), seed=1).complete(HELLO).text
    assert _client(server).complete(HELLO).text == "seed None"  # no seed unless asked


@PATHS
def test_calls_to_one_server_share_a_concurrency_limit(
    path: str, fault_server: Callable[..., FaultServer]
) -> None:
    """Nine calls from three roles, at most two at once. The server holds each answer until
    another call has come in while it waits (the last call, alone, is let through), so two calls
    in flight is reached whatever the thread scheduling, and a third would be seen."""
    in_flight, peak, arrivals, condition = 0, 0, 0, threading.Condition()

    def paired(body: dict[str, Any]) -> dict[str, Any]:
        nonlocal in_flight, peak, arrivals
        with condition:
            in_flight += 1
            arrivals += 1
            peak = max(peak, in_flight)
            condition.notify_all()
            mine = arrivals
            condition.wait_for(lambda: in_flight >= 2 or arrivals > mine or arrivals == 9, timeout=10)
            in_flight -= 1
        return {"content": "ok"}

    server = fault_server(paired)
    roles = ["policy", "critic", "user"] * 3
    with ThreadPoolExecutor(max_workers=9) as pool:
        list(
            pool.map(
                lambda role: _client(server, role=role, path=path, max_concurrency=2).complete(HELLO), roles
            )
        )
    assert server.requests == arrivals == 9 and peak == 2


@PATHS
def test_a_price_given_for_an_unknown_model_is_charged(
    path: str, fault_server: Callable[..., FaultServer]
) -> None:
    server = fault_server(_echo)
    priced = _client(server, path=path, input_cost_per_token=0.001, output_cost_per_token=0.002)
    usage = priced.complete(HELLO).usage
    assert usage.cost == pytest.approx(0.001 * usage.input_tokens + 0.002 * usage.output_tokens)
    assert _client(server, path=path).complete(HELLO).usage.cost is None  # a local model without a price
    assert "input_cost_per_token" not in server.bodies[-2]  # castbench's setting, not the server's


def test_a_known_model_behind_an_api_base_is_priced_from_litellms_map(
    fault_server: Callable[..., FaultServer],
) -> None:
    server = fault_server(_echo)
    usage = _client(server, path="openai/gpt-4o-mini").complete(HELLO).usage
    assert usage.cost is not None and usage.cost > 0
    assert server.bodies[-1]["model"] == "gpt-4o-mini"  # the provider prefix is castbench's, not the server's
