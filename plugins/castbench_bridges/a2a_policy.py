"""An A2A agent as the policy: `--policy a2a+http://HOST:PORT` (docs/a2a.md).

castbench is the A2A client and plays the customer: each trial is one A2A context (a fresh
`contextId`), each customer turn one `SendMessage` over the JSON-RPC binding the agent's card
names. The first message of a trial gives the agent what castbench's own protocol gives an agent
service when it opens a session: the public briefing (the domain policy, the tool schemas) and
the URL of that trial's MCP server, where the domain's tools run — in words, for an agent that
reads text, and as a data part (`{"castbench": {...}}`) for one that reads structure. Every tool
call arrives over MCP, so it is a step of the trial like any other: recorded, labelled, verified
by the run's critic before it executes. A critic's rejection of a reply comes back as a message
whose text is the critique (metadata `castbench_role: critic`, the verdict beside it).

The agent ends the conversation at the protocol level: a reply in a task that is `completed` is
its closing message, and once the customer has answered, the trial ends as `agent_stop` (graded
like any ending); a reply in a task that needs input, or a plain message, is a turn and the
conversation goes on (`TASK_STATES`; the stop marker in a reply's text ends it too).

The agent's card is read when the spec is resolved, before the first trial: an agent that is not
there fails the command in one line, and the card (as served) is among the spec's parameters, so
it is part of the run's identity (a redeployed agent with another card starts a new run) and
shown by its provenance. Failures are an agent service's (`castbench_bridges.agent_http`, whose
session this one extends: the same time limits, breaker and outcomes): a JSON-RPC error, a task
that fails, is rejected or canceled, a state A2A does not define, an answer with no text end
the trial as `agent_error`; a late answer as `timeout`; an agent that went away leaves the trial
unscored.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import Any

import httpx

from castbench._agents.registry import AgentSpec, AgentSpecError, Role
from castbench._agents.transports.wire import briefing_to_wire
from castbench._base.conversation import ReplyAction
from castbench._trial.episode import Episode
from castbench_bridges.agent_session import AgentSession, ServiceFailed

__all__ = ["A2A_PREFIX", "CARD_PATH", "TASK_STATES", "A2ASession", "a2a_spec", "read_card"]

A2A_PREFIX = "a2a+"
"""`a2a+http://HOST:PORT[/PATH]`: the agent whose card is at `/.well-known/agent-card.json` under it
(or the card's own URL, ending in `.json`)."""
CARD_PATH = "/.well-known/agent-card.json"
_JSONRPC = "JSONRPC"
_VERSION_HEADER = {"A2A-Version": "1.0"}
TASK_STATES: dict[str, str] = {
    "TASK_STATE_SUBMITTED": "working",
    "TASK_STATE_WORKING": "working",
    "TASK_STATE_INPUT_REQUIRED": "waiting",
    "TASK_STATE_AUTH_REQUIRED": "waiting",
    "TASK_STATE_COMPLETED": "ended",
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_REJECTED": "failed",
    "TASK_STATE_CANCELED": "failed",
}
"""What each A2A 1.0 task state means for the trial, as a2a-sdk groups them (its server's
`TERMINAL_TASK_STATES` and `INTERRUPTED_TASK_STATES`). `working`: not done, polled. `waiting`
(interrupted: input or auth required): the reply is a turn and the task goes on with the
customer's answer. `ended` (`completed`, terminal): the agent is done, its reply is its closing
message, and the trial ends as `agent_stop` (graded like any ending). `failed` (the other
terminal states: `failed`, `rejected`, and `canceled`, which castbench never asks for): the
agent's failure, `agent_error`, its status message kept in the reason. Any other state is no
A2A 1.0 state: `agent_error` too."""
_POLL_S = 0.05


_CLIENT: httpx.Client | None = None
_CLIENT_LOCK = threading.Lock()


def _client() -> httpx.Client:
    """One HTTP client for every A2A trial, as for agent services (`agent_http`), announcing the
    A2A protocol version it speaks (the SDK's server takes a request without it for 0.3)."""
    global _CLIENT
    with _CLIENT_LOCK:
        if _CLIENT is None:
            transport = httpx.HTTPTransport(
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            )
            _CLIENT = httpx.Client(transport=transport, headers=_VERSION_HEADER)
        return _CLIENT


def _card_url(url: str) -> str:
    return url if url.endswith(".json") else url.rstrip("/") + CARD_PATH


def read_card(url: str, timeout_s: float = 10.0) -> dict[str, Any]:
    """The agent card served for the agent at `url` (plain http(s)), as JSON. `AgentSpecError`,
    one line, when nothing answers or what answers is no card."""
    where = _card_url(url)
    try:
        response = httpx.get(where, timeout=timeout_s, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise AgentSpecError(
            f"A2A agent {url} is not reachable (its card at {where}: {exc!r}); start it, then re-run"
        ) from exc
    try:
        card = response.json() if response.status_code == 200 else None
    except ValueError:
        card = None
    if not isinstance(card, dict) or not card.get("name"):
        raise AgentSpecError(
            f"no A2A agent card at {where} (HTTP {response.status_code}): give the agent's base URL "
            f"(its card at {CARD_PATH}) or the card's URL"
        )
    return card


def _rpc_url(card: dict[str, Any], where: str) -> str:
    """The JSON-RPC endpoint the card offers (A2A 1.0 `supportedInterfaces`, or a 0.3 card's
    `url` with JSON-RPC its preferred transport)."""
    for interface in card.get("supportedInterfaces") or []:
        if str(interface.get("protocolBinding", "")).upper() == _JSONRPC and interface.get("url"):
            return str(interface["url"])
    if card.get("url") and str(card.get("preferredTransport", _JSONRPC)).upper() == _JSONRPC:
        return str(card["url"])
    raise AgentSpecError(
        f"the A2A agent card at {where} offers no JSON-RPC interface (castbench speaks A2A's "
        "JSON-RPC binding)"
    )


def a2a_spec(role: Role, spec: str, url: str) -> AgentSpec:
    """The policy `a2a+URL` names, its card read now (see the module's docstring)."""
    if role != "policy":
        raise AgentSpecError(f"{role} '{spec}': only a policy can be an A2A agent")
    try:
        import a2a.types  # noqa: F401  (the wire shapes come from the SDK)
    except ImportError as exc:
        raise AgentSpecError(
            f"policy '{spec}': A2A agents need the a2a-sdk package: pip install -e '.[bridges]'"
        ) from exc
    card = read_card(url)
    rpc = _rpc_url(card, _card_url(url))
    params = {"card": card, "rpc_url": rpc}
    base = url.removesuffix(CARD_PATH).rstrip("/")
    return AgentSpec(role, spec, base, None, params, False, "service", "a2a")


def _opening_text(briefing: dict[str, Any], mcp_url: str, opening: str) -> str:
    """The first message in words, for an agent that reads only text."""
    return (
        f"You are the {briefing['domain']} customer-service agent in this conversation; a customer "
        "is writing to you. Follow this policy:\n\n"
        f"{briefing['policy']}\n\n"
        f"Your tools are on the MCP server (streamable HTTP) at {mcp_url}: list them and call them "
        "there; they act on this customer's records. Answer each customer message with one reply.\n\n"
        f"The customer's first message:\n{opening}"
    )


class A2ASession(AgentSession):
    """One trial as one A2A context; `say` is one `SendMessage` (answering a message the way
    an agent service's session does: the reply, closing when the agent's task completed, or
    `ServiceFailed`)."""

    def __init__(self, episode: Episode, spec: AgentSpec) -> None:
        super().__init__(episode, spec, _client())
        self.base = str(spec.params["rpc_url"])
        self.context_id = self.id
        self.task_id: str | None = None
        self.mcp_url = ""

    def open(self, mcp_url: str) -> None:
        """A2A has no session to open: the briefing goes with the first message."""
        self.mcp_url = mcp_url

    def _message(self, message: dict[str, Any]) -> dict[str, Any]:
        from a2a.helpers.proto_helpers import new_data_part
        from a2a.types import Message, Part, Role
        from google.protobuf import json_format, struct_pb2

        parts = [Part(text=message["content"])]
        metadata: dict[str, Any] = {}
        if message["role"] == "critic":
            metadata = {"castbench_role": "critic", "verdict": message["verdict"]}
        elif self.mcp_url:  # the trial's first message: the briefing comes with it
            briefing = briefing_to_wire(self.episode.policy_briefing)
            # A2A data is JSON with double-precision numbers: the 64-bit seed travels as a string
            data = {
                "mcp_url": self.mcp_url,
                "briefing": {**briefing, "seed": str(briefing["seed"])},
                "opening": message["content"],
            }
            opening = _opening_text(briefing, self.mcp_url, message["content"])
            parts = [Part(text=opening), new_data_part({"castbench": data}, "application/json")]
            self.mcp_url = ""
        built = Message(
            message_id=uuid.uuid4().hex,
            context_id=self.context_id,
            task_id=self.task_id or "",
            role=Role.ROLE_USER,
            parts=parts,
            metadata=json_format.ParseDict(metadata, struct_pb2.Struct()),
        )
        return dict(json_format.MessageToDict(built))

    def _call(self, method: str, params: dict[str, Any], what: str) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
        answer = self._post("", body, what)
        if "error" in answer:
            raise ServiceFailed(
                "agent_error",
                f"A2A agent {self.base} answered an error while {what}: {str(answer['error'])[:300]}",
            )
        result = answer.get("result")
        if not isinstance(result, dict):
            raise ServiceFailed("agent_error", f"A2A agent {self.base} sent no JSON-RPC result while {what}")
        return result

    def say(self, message: dict[str, Any]) -> ReplyAction:
        result = self._call("SendMessage", {"message": self._message(message)}, "answering")
        if "message" in result:  # a plain message: a turn of the conversation, which goes on
            self.task_id = None
            reply = result["message"]
            return ReplyAction(text=self._text(reply.get("parts") if isinstance(reply, dict) else None))
        task = result.get("task")
        if not isinstance(task, dict):
            raise ServiceFailed("agent_error", f"A2A agent {self.base} answered neither a message nor a task")
        return self._task_reply(task)

    def _task_reply(self, task: dict[str, Any]) -> ReplyAction:
        """The reply a task carries once it stops working (its status message, else its
        artifacts' text); a task still working is polled (`GetTask`) within the time limits.
        Its state says what the reply is (`TASK_STATES`): a completed task is the agent's
        closing message (the trial ends as `agent_stop` once the customer has answered); one
        that needs input is a turn, continued with the customer's answer; a task that failed,
        was rejected or canceled is the agent's failure, its own words kept in the reason."""
        while True:
            state = str(self._status(task).get("state", ""))
            meaning = TASK_STATES.get(state)
            if meaning in ("ended", "waiting"):
                break
            if meaning == "failed":
                said = " ".join(self._texts(self._parts(task)))
                raise ServiceFailed(
                    "agent_error",
                    f"A2A agent {self.base}: its task ended {state}" + (f": {said[:300]}" if said else ""),
                )
            if meaning is None:
                raise ServiceFailed(
                    "agent_error",
                    f"A2A agent {self.base} answered a task in state {state[:80]!r}, which A2A 1.0 does "
                    f"not define (one of {', '.join(TASK_STATES)})",
                )
            deadline, limit = self.episode.deadline()
            if deadline is not None and time.monotonic() >= deadline:
                raise ServiceFailed("timeout", f"A2A agent {self.base} overran the {limit} (task {state})")
            time.sleep(_POLL_S)
            task = self._call("GetTask", {"id": task.get("id", "")}, "working on its task")
        self.task_id = str(task.get("id")) if meaning == "waiting" else None
        return ReplyAction(text=self._text(self._parts(task)), end=meaning == "ended")

    @staticmethod
    def _status(task: dict[str, Any]) -> dict[str, Any]:
        status = task.get("status")
        return status if isinstance(status, dict) else {}

    @staticmethod
    def _parts(task: dict[str, Any]) -> list[Any]:
        """A task's words: its status message's parts, else its artifacts'."""
        status_message = A2ASession._status(task).get("message")
        parts = status_message.get("parts") if isinstance(status_message, dict) else None
        if isinstance(parts, list) and parts:
            return parts
        artifacts = task.get("artifacts")
        return [
            part
            for artifact in (artifacts if isinstance(artifacts, list) else [])
            if isinstance(artifact, dict) and isinstance(artifact.get("parts"), list)
            for part in artifact["parts"]
        ]

    @staticmethod
    def _texts(parts: Any) -> list[str]:
        return [
            part["text"]
            for part in (parts if isinstance(parts, list) else [])
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]

    def _text(self, parts: Any) -> str:
        texts = self._texts(parts)
        if not texts:
            raise ServiceFailed("agent_error", f"A2A agent {self.base} answered without any text part")
        return "\n".join(texts)

    def close(self) -> None:
        """Nothing to close: the context ends with the trial (an open task is left to the agent)."""
