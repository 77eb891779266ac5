"""The agent as a service: castbench drives one trial's conversation over HTTP while the agent
uses the trial's tools over MCP (the castbench agent protocol, version 1; docs/agent-service.md).

    POST {url}/sessions                  {"session_id", "mcp_url", "briefing": {...public...}}
    POST {url}/sessions/{id}/messages    {"role": "user" | "critic", "content": "...", ["verdict": {...}]}
                                         -> {"reply": "..."}  (after any tool calls over MCP)
    DELETE {url}/sessions/{id}           the trial is over

The briefing is the public one, as a worker process gets it (`briefing_to_wire`: domain, policy
document, tool schemas, write tools, seed, trial index; a privileged one cannot be sent): the
agent's process never holds task data. The simulated user, the critic and the grader are the
episode's, as in every run. The agent failing (an HTTP error, an answer that is not the
protocol's) ends its trial as `agent_error`; overrunning the step or trial time limit ends it as
`timeout`, as for any agent; the run goes on. A service that is not there is no answer of the
agent's: a connection refused or dropped leaves the trial unscored (`infra_error`, retried, then
resumable), and each service has a circuit breaker like a model server's
(`castbench.models.breaker`): checked before the first trial (`check_service`), and after
`THRESHOLD` connection failures in a row the run stops with `ServerDown`, finished trials kept.
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

from castbench.agents.registry import AgentSpec
from castbench.agents.transports.wire import briefing_to_wire
from castbench.conversation import CritiqueTurn, ReplyAction, UserTurn
from castbench.models.breaker import SERVICE_HINT, SERVICE_LABEL, counted, is_connection_failure
from castbench.runner.episode import Episode, EpisodeOver
from castbench.service.mcp_host import McpHost
from castbench.service.mcp_trial import McpTrial, critique_text, verdict_json

__all__ = ["PROTOCOL", "drive_service", "shared_host"]

PROTOCOL = "castbench-agent/1"
_LABEL, _RESUME = SERVICE_LABEL, SERVICE_HINT
_DROPPED = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError, httpx.CloseError)
"""A connection the service closed mid-request: it went down (or crashed) under the trial."""

_HOST: McpHost | None = None
_CLIENT: httpx.Client | None = None
_HOST_LOCK = threading.Lock()


def shared_host() -> McpHost:
    """The process's loopback MCP server, started on first use; trials come and go on it."""
    global _HOST
    with _HOST_LOCK:
        if _HOST is None:
            _HOST = McpHost().start()
        return _HOST


def _shared_client() -> httpx.Client:
    """One HTTP client for every trial: building one costs tens of milliseconds (its TLS
    context), more than a whole step. No Nagle delay: a request goes out as headers then body,
    and the body would wait for the ACK of the headers, which the agent may delay by ~40 ms."""
    global _CLIENT
    with _HOST_LOCK:
        if _CLIENT is None:
            transport = httpx.HTTPTransport(
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            )
            _CLIENT = httpx.Client(transport=transport)
        return _CLIENT


class _ServiceFailed(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class _Session:
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
            raise _ServiceFailed(reason, f"agent service {self.base} {said}") from exc
        if response.status_code != 200:
            raise _ServiceFailed(
                "agent_error",
                f"agent service {self.base} answered HTTP {response.status_code} while {what}: "
                f"{response.text[:300]}",
            )
        try:
            answer = response.json()
        except ValueError as exc:
            raise _ServiceFailed(
                "agent_error", f"agent service {self.base} sent no JSON while {what}"
            ) from exc
        if not isinstance(answer, dict):
            raise _ServiceFailed("agent_error", f"agent service {self.base} sent no JSON object while {what}")
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
            raise _ServiceFailed(
                "agent_error", f"agent service {self.base} answered without a 'reply' string"
            )
        return ReplyAction(text=reply)

    def close(self) -> None:
        with suppress(httpx.HTTPError):  # the trial is over either way
            self.client.delete(f"{self.base}/sessions/{self.id}", timeout=5.0)


def _session(episode: Episode, spec: AgentSpec) -> _Session:
    """The trial's session with the agent: castbench's agent protocol, or A2A (`a2a+http://`)."""
    if spec.transport == "a2a":
        from castbench.service.a2a_policy import A2ASession  # a2a-sdk: only for A2A agents

        return A2ASession(episode, spec)
    return _Session(episode, spec, _shared_client())


def drive_service(episode: Episode, spec: AgentSpec) -> None:
    """Run `episode` to its end with the agent service `spec` names as its policy."""
    view = episode.reset()
    host = shared_host()
    trial = McpTrial(episode)
    url = host.add(trial)
    session = _session(episode, spec)
    try:
        if view is None:
            return
        session.open(url)
        message: dict[str, Any] = {"role": "user", "content": episode.opening}
        while not episode.done:
            reply = session.say(message)
            try:
                observation = trial.step(reply).observation
            except EpisodeOver:  # a tool call ended it (a transfer, the step limit, a failing critic)
                break
            if isinstance(observation, CritiqueTurn):
                verdict = observation.verdict
                message = {
                    "role": "critic",
                    "content": critique_text(verdict),
                    "verdict": verdict_json(verdict),
                }
            elif isinstance(observation, UserTurn):
                message = {"role": "user", "content": observation.text}
    except _ServiceFailed as exc:
        episode.fail(exc.reason, str(exc))  # type: ignore[arg-type]
    finally:
        host.remove(url)
        if view is not None:
            session.close()
