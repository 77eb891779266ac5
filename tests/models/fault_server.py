"""A fault-injecting OpenAI-compatible chat server for tests (stdlib only, 127.0.0.1, free port).

Answers come from a `Responder` (request body -> assistant message), so they depend only on the
request. Faults are drawn from a seed and the request itself:

- infrastructure faults (`rate_limit` 429 with Retry-After, `server_error` 500, `slow` (no answer
  for a minute, far past any client timeout in the tests; released when the server stops),
  `empty` 200 with no choices, and the ones no retry cures: `bad_request` 400, `unauthorized`
  401) are drawn per (request, how often it was seen): a retry of the same request
  draws again, and the answer it finally gets is the fault-free one;
- the agent faults are drawn per request only, so every replay of that request gets the same
  answer, as a model would give: `malformed` (tool-call arguments that are not JSON), and
  `context_length` (a 400 "maximum context length exceeded": the conversation itself is refused).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["INFRA_FAULTS", "FaultPlan", "FaultServer", "Responder"]

INFRA_FAULTS = ("rate_limit", "server_error", "slow", "empty", "bad_request", "unauthorized")

Responder = Callable[[dict[str, Any]], dict[str, Any]]
"""Request body -> {"content": str | None, "tool_calls": [{"name": ..., "arguments": str}],
"finish_reason": optional}"""


@dataclass(frozen=True)
class FaultPlan:
    rates: dict[str, float] = field(default_factory=dict)
    """Fault kind -> probability per request (infrastructure kinds share one draw)."""
    seed: int = 0
    slow_s: float = 60.0
    """How long a `slow` answer keeps the client waiting: far past its timeout, so a loaded machine
    cannot turn a fault into a success."""
    retry_after_ms: int = 20
    fail_first: int = 0
    """The first n requests get a 500 whatever the draw (a deterministic outage)."""
    agent_models: tuple[str, ...] | None = None
    """The models (request `model` field) agent faults are drawn for; None: every model."""


def _unit(*parts: object) -> float:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class _Server(ThreadingHTTPServer):
    """A listen backlog as a model server has (uvicorn: 2048): with the default 5, a burst of
    connections from trials starting together loses SYNs and retries them a second later."""

    request_queue_size = 256


class FaultServer:
    def __init__(self, responder: Responder, plan: FaultPlan | None = None) -> None:
        self.responder = responder
        self.plan = plan or FaultPlan()
        self.faults: Counter[str] = Counter()
        self.requests = 0
        self.bodies: list[dict[str, Any]] = []
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # slow answers still waiting give up: the client left long ago
        self._server.shutdown()
        self._server.server_close()

    def _draw(self, body: dict[str, Any]) -> str | None:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self._lock:
            self.requests += 1
            self.bodies.append(body)
            seen = self._seen[digest]
            self._seen[digest] += 1
            if self.requests <= self.plan.fail_first:
                return "server_error"
        chosen = self.plan.agent_models is None or body.get("model") in self.plan.agent_models
        agent_draw = _unit(self.plan.seed, digest, "agent") if chosen else 1.0
        if body.get("tools") and agent_draw < self.plan.rates.get("malformed", 0.0):
            return "malformed"
        if agent_draw < self.plan.rates.get("context_length", 0.0):
            return "context_length"
        draw, edge = _unit(self.plan.seed, digest, seen), 0.0
        for kind in INFRA_FAULTS:
            edge += self.plan.rates.get(kind, 0.0)
            if draw < edge:
                return kind
        return None

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
        fault = self._draw(body)
        if fault is not None:
            with self._lock:
                self.faults[fault] += 1
        if fault == "rate_limit":
            headers = {"Retry-After": "1", "retry-after-ms": str(self.plan.retry_after_ms)}
            return 429, headers, {"error": {"message": "rate limited (injected)", "type": "rate_limit"}}
        if fault == "server_error":
            return 500, {}, {"error": {"message": "internal error (injected)", "type": "server_error"}}
        if fault == "bad_request":
            return 400, {}, {"error": {"message": "bad request (injected)", "type": "invalid_request_error"}}
        if fault == "context_length":
            error = {
                "message": "This model's maximum context length is 8192 tokens (injected)",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
            return 400, {}, {"error": error}
        if fault == "unauthorized":
            return 401, {}, {"error": {"message": "invalid api key (injected)", "type": "invalid_api_key"}}
        if fault == "slow":
            self._stopping.wait(self.plan.slow_s)
        message = self.responder(body)
        if fault == "malformed":
            calls = message.get("tool_calls") or [{"name": _first_tool(body)}]
            message = {
                "content": None,
                "tool_calls": [{"name": calls[0]["name"], "arguments": '{"order_id": '}],
            }
        choices = [] if fault == "empty" else [_choice(message)]
        prompt = len(json.dumps(body.get("messages", []))) // 4
        completion = len(json.dumps(message)) // 4
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        return (
            200,
            {},
            {
                "id": "chatcmpl-fault",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", ""),
                "choices": choices,
                "usage": usage,
            },
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, {}, {"object": "list", "data": [{"id": "fault-server", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                self._send(*server.answer(body))

            def _send(self, status: int, headers: dict[str, str], payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on a slow answer: as intended

        return Handler


def _first_tool(body: dict[str, Any]) -> str:
    return str(body["tools"][0]["function"]["name"])


def _choice(message: dict[str, Any]) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]},
        }
        for index, c in enumerate(message.get("tool_calls") or [])
    ]
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if calls:
        out["tool_calls"] = calls
    finish = message.get("finish_reason") or ("tool_calls" if calls else "stop")  # "length": cut off
    return {"index": 0, "message": out, "finish_reason": finish}
