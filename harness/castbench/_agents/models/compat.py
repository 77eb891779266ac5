"""The lean path to OpenAI-compatible chat servers (`ModelSettings.openai_compatible`): vLLM,
llama.cpp, `openai/NAME` or `hosted_vllm/NAME` with an `api_base`.

One aiohttp session per server and limit, on the process's shared loop (`castbench._agents.models.loop`),
with a connection pool as large as the calls allowed in flight; the limit itself is a semaphore
on that loop (`loop_slot`), so a trial running on the loop waits for a slot without blocking it.
litellm's synchronous path costs several milliseconds of CPU per call under the GIL and its pool
stops at 100 connections; this costs well under one (see `bench/model_path.py`). It only moves
bytes: retries, the cache and costs stay in `castbench._agents.models.client`, the same for both paths.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import yarl
from aiohttp.payload import BytesPayload

from castbench._agents.models.limits import loop_slot
from castbench._agents.models.loop import at_exit, wait_for
from castbench._agents.models.retry import EmptyResponse
from castbench._agents.models.settings import ModelSettings

__all__ = ["PRICE_KEYS", "ServerError", "api_key", "chat"]

PRICE_KEYS = ("input_cost_per_token", "output_cost_per_token")
"""Settings that price a model for castbench; never sent to the server."""

_servers: dict[tuple[str, int, str], _Server] = {}
"""Touched only on the shared loop's thread."""


class ServerError(Exception):
    """A non-200 answer: `status_code` and `headers` are what the retry policy reads."""

    def __init__(self, status_code: int, message: str, headers: dict[str, str]) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.headers = headers


def api_key(settings: ModelSettings) -> str:
    """The key litellm would send: `api_key_env`'s, else the provider's usual variable, else a
    placeholder (servers of one's own need none)."""
    provider = settings.model.split("/", 1)[0]
    variable = settings.api_key_env or ("OPENAI_API_KEY" if provider == "openai" else "HOSTED_VLLM_API_KEY")
    return os.environ.get(variable) or "EMPTY"


def _error_message(data: bytes) -> str:
    try:
        error = json.loads(data).get("error")
        message = error.get("message") if isinstance(error, dict) else error
        return str(message)[:500]
    except (ValueError, AttributeError):
        return data[:500].decode(errors="replace")


@dataclass(frozen=True)
class _Server:
    """One server's session (pool, headers) and its parsed endpoint URL: built once, because
    per-request header merging and URL parsing were a fair share of each call's CPU."""

    session: aiohttp.ClientSession
    url: yarl.URL


def _server(api_base: str, limit: int, key: str) -> _Server:
    server = _servers.get((api_base, limit, key))
    if server is None or server.session.closed:
        connector = aiohttp.TCPConnector(limit=limit, limit_per_host=0, ttl_dns_cache=300)
        session = aiohttp.ClientSession(
            connector=connector,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        url = yarl.URL(api_base.rstrip("/") + "/chat/completions")
        server = _servers[(api_base, limit, key)] = _Server(session, url)
    return server


async def _close_sessions() -> None:
    for server in list(_servers.values()):
        await server.session.close()
    _servers.clear()


at_exit(_close_sessions())


async def _post(settings: ModelSettings, key: str, body: bytes) -> Any:
    """The request, once a slot is free: its timeout runs from then. The body goes as a ready
    payload (aiohttp otherwise looks its type up in a registry on every request)."""
    assert settings.api_base is not None
    limit = settings.max_concurrency or 0  # 0: aiohttp's "no limit"
    server = _server(settings.api_base, limit, key)
    data = BytesPayload(body, content_type="application/json")
    async with contextlib.nullcontext() if not limit else loop_slot(settings.concurrency_key, limit):
        try:
            async with server.session.post(
                server.url, data=data, timeout=aiohttp.ClientTimeout(total=settings.attempt_timeout)
            ) as response:
                answer = await response.read()
                if response.status != 200:
                    raise ServerError(response.status, _error_message(answer), dict(response.headers))
        except aiohttp.ClientError as exc:  # refused, reset, disconnected: transient for the retries
            raise ConnectionError(f"{type(exc).__name__}: {exc}") from exc
    try:
        return orjson.loads(answer)
    except ValueError as exc:
        raise EmptyResponse(f"the server at {settings.api_base} answered 200 with no JSON") from exc


def chat(settings: ModelSettings, request: dict[str, Any], key: str) -> dict[str, Any]:
    """One attempt: POST the chat request, the decoded answer or an exception the retry policy
    classifies (`ServerError`, `ConnectionError`, `TimeoutError`, `EmptyResponse`)."""
    body = {k: v for k, v in request.items() if k not in PRICE_KEYS}
    body["model"] = settings.model.split("/", 1)[1]
    answer = wait_for(_post(settings, key, orjson.dumps(body)), None)
    if not isinstance(answer, dict) or not answer.get("choices"):
        raise EmptyResponse(f"{settings.model} returned no choices")
    return answer
