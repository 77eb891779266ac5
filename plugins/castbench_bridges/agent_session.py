"""One trial's session with an agent service, in castbench's agent protocol (`PROTOCOL`; the
routes are in `castbench_bridges.agent_http`): the HTTP exchange and how each way it fails ends the
trial (`ServiceFailed`: `agent_error`, `timeout`, or `infra_error` for a service that is not there).

A module of its own, below both drivers of a session: `castbench_bridges.agent_http` runs a trial
with one, and `castbench_bridges.a2a_policy` (A2A agents, `a2a+http://`) subclasses it, while the
agent-service driver picks the A2A session for an A2A agent.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from contextlib import suppress
from typing import Any

import httpx

from castbench._agents.models.breaker import SERVICE_HINT, SERVICE_LABEL, counted, is_connection_failure
from castbench._agents.registry import AgentSpec
from castbench._agents.transports.wire import briefing_to_wire
from castbench._base.conversation import ReplyAction
from castbench._trial.episode import Episode

__all__ = ["PROTOCOL", "AgentSession", "ServiceFailed", "shared_client"]

PROTOCOL = "castbench-agent/1"
_LABEL, _RESUME = SERVICE_LABEL, SERVICE_HINT
_DROPPED = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError, httpx.CloseError)
"""A connection the service closed mid-request: it went down (or crashed) under the trial."""

_CLIENT: httpx.Client | None = None
_CLIENT_LOCK = threading.Lock()


def shared_client() -> httpx.Client:
    """One HTTP client for every trial: building one costs tens of milliseconds (its TLS
    context), more than a whole step. No Nagle delay: a request goes out as headers then body,
    and the body would wait for the ACK of the headers, which the agent may delay by ~40 ms."""
    global _CLIENT
    with _CLIENT_LOCK:
        if _CLIENT is None:
            transport = httpx.HTTPTransport(
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            )
            _CLIENT = httpx.Client(transport=transport)
        return _CLIENT


class ServiceFailed(Exception):
    """The agent service failed the trial: `reason` is how it ends (`agent_error`, `timeout`,
    `infra_error`), the message says which service and while doing what."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class AgentSession:
    """One trial's session with an agent service at `spec`'s URL: `open` sends the public briefing
    and the trial's MCP URL, `say` one message and reads the agent's reply, `close` ends it."""

    def __init__(self, episode: Episode, spec: AgentSpec, client: httpx.Client) -> None:
        self.episode, self.client = episode, client
        self.base = spec.name.rstrip("/")
        self.id = uuid.uuid4().hex

    def _post(self, path: str, body: dict[str, Any], what: str) -> dict[str, Any]:
        deadline, limit = self.episode.deadline()
        timeout = None if deadline is None else max(0.001, deadline - time.monotonic())

        def post() -> httpx.Response:
            return self.client.post(
                self.base + path,
                content=json.dumps(body).encode(),  # ASCII: an agent's lone surrogate as its escape
                headers={"content-type": "application/json"},
                timeout=timeout,
            )

        try:
            response = counted(self.base, post, _LABEL, _RESUME)()  # ServerDown: the run stops
        except (httpx.HTTPError, ConnectionError) as exc:
            if is_connection_failure(exc) or isinstance(exc, _DROPPED):
                reason, said = "infra_error", f"is not reachable while {what}: {exc!r}"
            elif isinstance(exc, httpx.TimeoutException):
                reason, said = "timeout", f"overran the {limit} while {what}"
            else:
                reason, said = "agent_error", f"failed while {what}: {exc!r}"
            raise ServiceFailed(reason, f"agent service {self.base} {said}") from exc
        if response.status_code != 200:
            raise ServiceFailed(
                "agent_error",
                f"agent service {self.base} answered HTTP {response.status_code} while {what}: "
                f"{response.text[:300]}",
            )
        try:
            answer = response.json()
        except ValueError as exc:
            raise ServiceFailed(
                "agent_error", f"agent service {self.base} sent no JSON while {what}"
            ) from exc
        if not isinstance(answer, dict):
            raise ServiceFailed("agent_error", f"agent service {self.base} sent no JSON object while {what}")
        return answer

    def open(self, mcp_url: str) -> None:
        body = {
            "protocol": PROTOCOL,
            "session_id": self.id,
            "mcp_url": mcp_url,
            "briefing": briefing_to_wire(self.episode.policy_briefing),
        }
        self._post("/sessions", body, "opening its session")

    def say(self, message: dict[str, Any]) -> ReplyAction:
        """The agent's answer to `message`, as the reply it steps the trial with (a closing one
        carries the stop marker in its text: this protocol's only way to end)."""
        answer = self._post(f"/sessions/{self.id}/messages", message, "answering")
        reply = answer.get("reply")
        if not isinstance(reply, str):
            raise ServiceFailed("agent_error", f"agent service {self.base} answered without a 'reply' string")
        return ReplyAction(text=reply)

    def close(self) -> None:
        with suppress(httpx.HTTPError):  # the trial is over either way
            self.client.delete(f"{self.base}/sessions/{self.id}", timeout=5.0)
