"""One model call, with castbench's retries, concurrency limit, cache and costs.

OpenAI-compatible servers given by `api_base` (`openai/NAME`, `hosted_vllm/NAME`) are called
through the lean async client (`castbench._agents.models.compat`); every other provider through litellm,
imported on first use. Both paths share the retry loop, the limit, the cache and the pricing.
Everything provider-specific ends here: agents get a `Completion` (text, raw tool calls, usage)
and never see litellm's types, so what they record does not depend on litellm's version.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from castbench._agents.models import breaker, compat
from castbench._agents.models.cache import ResponseCache, cache_key
from castbench._agents.models.limits import slot
from castbench._agents.models.loop import blocking
from castbench._agents.models.prices import UnitPrices, unit_prices
from castbench._agents.models.retry import EmptyResponse, RetryPolicy, call_with_retries
from castbench._agents.models.settings import ModelSettings
from castbench._base.conversation import Usage
from castbench._base.errors import FatalInfrastructureError, InfrastructureError

__all__ = ["Completion", "ModelClient", "RawToolCall", "TrialKey", "capped"]


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


@functools.cache
def _litellm() -> Any:
    """litellm, imported on first use: ~3 s, and not needed for OpenAI-compatible servers."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-map fetch at import
    import litellm

    litellm.suppress_debug_info = True  # its "Give Feedback / Get Help" banners on every error
    return litellm


def _cost(response: Any) -> float | None:
    """The call's price: litellm's price map, or the `input_cost_per_token` /
    `output_cost_per_token` settings given for a model it does not know."""
    known = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if known is not None:
        return float(known)
    try:
        return float(_litellm().completion_cost(completion_response=response))
    except Exception:  # a model without a price (local servers) has no cost, not an error
        return None


def _price(settings: ModelSettings, input_tokens: int, output_tokens: int) -> float | None:
    """The lean path's price: the settings' per-token prices, else litellm's price map; local
    models have none (no cost, not an error)."""
    extra = settings.model_extra or {}
    if all(key in extra for key in compat.PRICE_KEYS):
        prices: UnitPrices | None = UnitPrices(
            float(extra["input_cost_per_token"]), float(extra["output_cost_per_token"])
        )
    else:
        prices = unit_prices(settings.model)
    return None if prices is None else prices.input * input_tokens + prices.output * output_tokens


class ModelClient:
    """The calls of one role in one trial."""

    def __init__(self, settings: ModelSettings, role: str, trial: TrialKey) -> None:
        self.settings = settings
        self.role = role
        self.trial = trial
        self._cache = ResponseCache(settings.cache_dir) if settings.cache_dir else None
        self._policy = RetryPolicy(
            settings.max_attempts,
            settings.max_call_s,
            settings.backoff_s,
            settings.backoff_max_s,
            resend_timeouts=not settings.local
            if settings.resend_timeouts is None
            else settings.resend_timeouts,
        )
        self._lean = settings.openai_compatible
        self._api_key = compat.api_key(settings) if self._lean else self._key()
        self.waiting: str | None = None
        """While a call waits for the server, what it waits for (`policy model X at BASE`); left
        set when a deadline cut the wait short, so the trial can tell a slow server from a slow
        agent (`castbench._trial.episode`): a model agent's step is all model call."""
        self.failed = Usage()
        """Calls that got no answer (failed after retries, refused, cut short by a time limit):
        their time and count, which no action or verdict carries. Agents report it as
        `failed_usage`, so a trial's usage says what it really spent."""

    def overran(self, limit: str) -> InfrastructureError | None:
        """What a time limit (`limit`, as the trial names it) that ran out while this client waited
        for its server means: the server's slowness, an infrastructure error (the trial restarts
        from its seed, and stays unscored if it keeps overrunning), not the agent's timeout. Fatal
        for a server on this machine, which keeps computing the abandoned request (as a timed-out
        attempt is, `castbench._agents.models.retry`). None when no call was cut short."""
        if self.waiting is None:
            return None
        said = (
            f"{self.waiting}: no answer within the {limit}; the model server is too slow for the "
            "time limits (not the agent's failure): raise --step-timeout/--trial-timeout (0: none) "
            "or lighten the server's load"
        )
        if not self._policy.resend_timeouts:
            return FatalInfrastructureError(
                f"{said}; not re-tried, since a server on this machine keeps computing the abandoned "
                "request; then re-run to resume"
            )
        return InfrastructureError(said)

    def _key(self) -> str | None:
        if self.settings.api_key_env is not None:
            return os.environ.get(self.settings.api_key_env)
        if self.settings.api_base is not None:
            missing = _litellm().validate_environment(model=self.settings.model)["missing_keys"]
            return "EMPTY" if missing else None  # OpenAI-compatible servers of one's own
        return None

    def _limit(self) -> contextlib.AbstractContextManager[Any]:
        limit = self.settings.max_concurrency
        return contextlib.nullcontext() if limit is None else slot(self.settings.concurrency_key, limit)

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

    def _lean_attempt(self, request: dict[str, Any]) -> Callable[[], dict[str, Any]]:
        key = self._api_key or "EMPTY"
        return lambda: compat.chat(self.settings, request, key)  # its limit is on the loop

    def _litellm_attempt(self, request: dict[str, Any]) -> Callable[[], Any]:
        call = {
            **request,
            "api_base": self.settings.api_base,
            "api_key": self._api_key,
            "timeout": self.settings.attempt_timeout,
            "num_retries": 0,  # castbench's retry loop is the only one
            "max_retries": 0,
        }
        litellm = _litellm()

        def completion() -> Any:
            with self._limit():
                return litellm.completion(**call)

        def attempt() -> Any:
            response = blocking(completion)  # a thread's wait: never on the loop trials run on
            if not getattr(response, "choices", None):
                raise EmptyResponse(f"{self.settings.model} returned no choices")
            return response

        return attempt

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        started = time.perf_counter()
        self.waiting = f"{self.role} model {self.settings.model} at {self.settings.server}"
        try:
            completion = self._complete(started, messages, tools, response_format)
        except BaseException as exc:  # a failure, a time limit, a cancellation: the call still cost this
            spent = Usage(latency_s=time.perf_counter() - started, calls=1, failed_calls=1)
            self.failed = self.failed + spent
            if isinstance(exc, Exception):  # an answer of sorts; a deadline (BaseException) was not
                self.waiting = None
            raise
        self.waiting = None
        return completion

    def _complete(
        self,
        started: float,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
    ) -> Completion:
        request = self._request(messages, tools, response_format)
        key = None
        if self._cache is not None:
            key = cache_key(
                {"role": self.role, "api_base": self.settings.api_base, "trial": list(self.trial), **request}
            )
            hit = self._cache.get(key)
            if hit is not None:
                return _from_cache(hit, time.perf_counter() - started)
        describe = f"{self.role} model {self.settings.model}"
        server = self.settings.server
        if self._lean:
            lean = breaker.counted(server, self._lean_attempt(request))
            answer, retries = call_with_retries(lean, self._policy, describe)
            completion = _from_json(self.settings, answer, retries, time.perf_counter() - started)
        else:
            through_litellm = breaker.counted(server, self._litellm_attempt(request))
            response, retries = call_with_retries(through_litellm, self._policy, describe)
            completion = _completion(response, _cost(response), retries, time.perf_counter() - started)
        completion = capped(completion, self.settings.max_answer_chars)
        if self._cache is not None and key is not None:
            self._cache.put(key, _to_cache(completion))
        return completion


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = f"[castbench cut this answer at {limit:,} of its {len(text):,} characters (max_answer_chars)]"
    return f"{text[:limit]}\n{cut}"


def capped(completion: Completion, limit: int) -> Completion:
    """At most `limit` characters of text and of each tool call's arguments: a model that runs
    away (llama.cpp's native tool calls ignore max_tokens in the arguments) cannot fill the
    conversation it is shown next, nor the store, with thousands of tokens. The cut says so;
    cut arguments are no longer JSON, so the environment answers them with an error."""
    text = _cap(completion.text, limit)
    calls = tuple(call._replace(arguments=_cap(call.arguments, limit)) for call in completion.tool_calls)
    if text is completion.text and all(a is b for a, b in zip(calls, completion.tool_calls, strict=True)):
        return completion
    return Completion(text, calls, completion.finish_reason, completion.usage)


def _from_json(settings: ModelSettings, answer: dict[str, Any], retries: int, latency_s: float) -> Completion:
    """A Completion from the decoded JSON of an OpenAI-compatible answer."""
    choice = answer["choices"][0]
    message = choice.get("message") or {}
    calls = tuple(
        RawToolCall(
            call.get("id") or f"call_{index}",
            (call.get("function") or {}).get("name") or "",
            (call.get("function") or {}).get("arguments") or "",
        )
        for index, call in enumerate(message.get("tool_calls") or [])
    )
    tokens = answer.get("usage") or {}
    input_tokens, output_tokens = tokens.get("prompt_tokens") or 0, tokens.get("completion_tokens") or 0
    usage = Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=_price(settings, input_tokens, output_tokens),
        latency_s=latency_s,
        calls=1,
        retries=retries,
    )
    return Completion(message.get("content") or "", calls, choice.get("finish_reason"), usage)


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
