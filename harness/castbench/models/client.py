"""One model call through litellm, with castbench's retries, concurrency limit, cache and costs.

Everything provider-specific ends here: agents get a `Completion` (text, raw tool calls, usage)
and never see litellm's types, so what they record does not depend on litellm's version.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

from castbench.agents.conversation import Usage
from castbench.models.cache import ResponseCache, cache_key
from castbench.models.limits import slot
from castbench.models.retry import EmptyResponse, RetryPolicy, call_with_retries
from castbench.models.settings import ModelSettings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-map fetch at import

import litellm  # noqa: E402

litellm.suppress_debug_info = True  # its "Give Feedback / Get Help" banners on every error

__all__ = ["Completion", "ModelClient", "RawToolCall", "TrialKey"]


class RawToolCall(NamedTuple):
    id: str
    name: str
    arguments: str
    """As the model wrote it: possibly not JSON at all."""


class TrialKey(NamedTuple):
    """Which trial a call belongs to: part of the cache key and of the provider seed."""

    seed: int
    trial_index: int


@dataclass(frozen=True)
class Completion:
    text: str
    tool_calls: tuple[RawToolCall, ...]
    finish_reason: str | None
    usage: Usage


def _provider_seed(base: int, trial_seed: int) -> int:
    digest = hashlib.sha256(f"{base}|{trial_seed}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def _cost(response: Any) -> float | None:
    """The call's price: litellm's price map, or the `input_cost_per_token` /
    `output_cost_per_token` settings given for a model it does not know."""
    known = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if known is not None:
        return float(known)
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # a model without a price (local servers) has no cost, not an error
        return None


class ModelClient:
    """The calls of one role in one trial."""

    def __init__(self, settings: ModelSettings, role: str, trial: TrialKey) -> None:
        self.settings = settings
        self.role = role
        self.trial = trial
        self._cache = ResponseCache(settings.cache_dir) if settings.cache_dir else None
        self._policy = RetryPolicy(
            settings.max_attempts, settings.max_call_s, settings.backoff_s, settings.backoff_max_s
        )
        self._api_key = self._key()

    def _key(self) -> str | None:
        if self.settings.api_key_env is not None:
            return os.environ.get(self.settings.api_key_env)
        if self.settings.api_base is not None:
            missing = litellm.validate_environment(model=self.settings.model)["missing_keys"]
            return "EMPTY" if missing else None  # OpenAI-compatible servers of one's own
        return None

    def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            **self.settings.generation,
        }
        if tools:
            request["tools"] = tools
            request["tool_choice"] = "auto"
        if response_format is not None:
            request["response_format"] = response_format
        if self.settings.seed is not None:
            request["seed"] = _provider_seed(self.settings.seed, self.trial.seed)
        return request

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        started = time.perf_counter()
        request = self._request(messages, tools, response_format)
        key = None
        if self._cache is not None:
            key = cache_key(
                {"role": self.role, "api_base": self.settings.api_base, "trial": list(self.trial), **request}
            )
            hit = self._cache.get(key)
            if hit is not None:
                return _from_cache(hit, time.perf_counter() - started)
        call = {
            **request,
            "api_base": self.settings.api_base,
            "api_key": self._api_key,
            "timeout": self.settings.timeout,
            "num_retries": 0,  # castbench's retry loop is the only one
            "max_retries": 0,
        }
        limit = slot(self.settings.concurrency_key, self.settings.max_concurrency)

        def attempt() -> Any:
            with limit:
                response = litellm.completion(**call)
            if not getattr(response, "choices", None):
                raise EmptyResponse(f"{self.settings.model} returned no choices")
            return response

        describe = f"{self.role} model {self.settings.model}"
        response, retries = call_with_retries(attempt, self._policy, describe)
        completion = _completion(response, _cost(response), retries, time.perf_counter() - started)
        if self._cache is not None and key is not None:
            self._cache.put(key, _to_cache(completion))
        return completion


def _completion(response: Any, cost: float | None, retries: int, latency_s: float) -> Completion:
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        RawToolCall(call.id or f"call_{index}", call.function.name or "", call.function.arguments or "")
        for index, call in enumerate(getattr(message, "tool_calls", None) or [])
    )
    tokens = getattr(response, "usage", None)
    usage = Usage(
        input_tokens=getattr(tokens, "prompt_tokens", 0) or 0,
        output_tokens=getattr(tokens, "completion_tokens", 0) or 0,
        cost=cost,
        latency_s=latency_s,
        calls=1,
        retries=retries,
    )
    return Completion(message.content or "", calls, choice.finish_reason, usage)


def _to_cache(completion: Completion) -> dict[str, Any]:
    return {
        "text": completion.text,
        "tool_calls": [list(call) for call in completion.tool_calls],
        "finish_reason": completion.finish_reason,
        "input_tokens": completion.usage.input_tokens,
        "output_tokens": completion.usage.output_tokens,
    }


def _from_cache(hit: dict[str, Any], latency_s: float) -> Completion:
    """A cached answer costs nothing this time; its tokens are reported as they were spent."""
    usage = Usage(
        input_tokens=hit["input_tokens"],
        output_tokens=hit["output_tokens"],
        cost=0.0,
        latency_s=latency_s,
        calls=1,
    )
    calls = tuple(RawToolCall(*call) for call in hit["tool_calls"])
    return Completion(hit["text"], calls, hit["finish_reason"], usage)
