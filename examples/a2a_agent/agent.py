"""An example A2A agent (a2a-sdk 1.3, JSON-RPC binding) that castbench evaluates as it is:
plain Python, offline, no model. It decides with castbench's public scripted logic (by default
`scripted:lookup-refuse`, which sees only the public briefing and the conversation) and calls
the domain's tools over the MCP server castbench names in each conversation's first message.

    python examples/a2a_agent/agent.py --port 9999
    castbench eval --domain retail --policy a2a+http://127.0.0.1:9999 --trials 8

Each A2A context is one conversation (one castbench trial). Its first message carries castbench's
briefing as a data part (`{"castbench": {"mcp_url", "briefing", "opening"}}`) next to the same in
words; every later message is the customer's, or a critique of the last reply (metadata
`castbench_role: critic`, with the verdict). Each reply is a message, and the conversation goes
on; the decider's closing reply (`ReplyAction.end`, or the stop marker in its text) is the
status message of a `completed` task, which is how an A2A agent says it is done: castbench ends
the trial as `agent_stop` once the customer has answered. The conversation logic (the decider, the MCP client,
revising after a critique) is the reference agent service's (`examples/agent_service/agent.py`):
only the protocol differs, so the two give the same trials.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import socket
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from google.protobuf import json_format
from starlette.applications import Starlette

from castbench.agents import AGENT_STOP


def _reference() -> Any:
    """The reference agent service's module (its conversation logic), loaded from its file."""
    path = Path(__file__).resolve().parents[1] / "agent_service" / "agent.py"
    spec = importlib.util.spec_from_file_location("castbench_reference_agent", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _reference()

KEEP = 1024
"""Conversations kept open at once (an A2A context has no close: the oldest are closed)."""


class CastbenchExecutor(AgentExecutor):
    """Answers each message of a context with the conversation logic of the reference service."""

    def __init__(self, decider: Any) -> None:
        self.decider = decider
        self.loop = reference._Loop()
        self.sessions: OrderedDict[str, Any] = OrderedDict()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        message = json_format.MessageToDict(context.message)
        parts = message.get("parts", [])
        text = "\n".join(part["text"] for part in parts if "text" in part)
        data = next(
            (part["data"]["castbench"] for part in parts if "castbench" in part.get("data", {})), None
        )
        key = context.context_id or ""
        session = self.sessions.get(key)
        if session is None:
            if data is None:
                reply = "This agent serves castbench conversations: the first message carries its briefing."
                await event_queue.enqueue_event(new_text_message(reply, context_id=key))
                return
            briefing = data["briefing"]  # A2A data numbers are doubles: the seed comes as a string
            briefing.update(seed=int(briefing["seed"]), trial_index=int(briefing["trial_index"]))
            session = await asyncio.to_thread(reference.Session, data, self.decider, self.loop)
            self._keep(key, session)
            body: dict[str, Any] = {"role": "user", "content": data["opening"]}
        elif message.get("metadata", {}).get("castbench_role") == "critic":
            body = {"role": "critic", "content": text, "verdict": message["metadata"]["verdict"]}
        else:
            body = {"role": "user", "content": text}
        reply = await asyncio.to_thread(session.answer, body)
        if AGENT_STOP not in reply:  # a turn: the conversation goes on
            await event_queue.enqueue_event(new_text_message(reply, context_id=key))
            return
        # the decider's closing message: A2A's way to say the agent is done is a completed task
        task = context.current_task or new_task_from_user_message(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        said = reply.replace(AGENT_STOP, "").strip()
        await updater.complete(new_text_message(said, context_id=task.context_id, task_id=task.id))

    def _keep(self, key: str, session: Any) -> None:
        self.sessions[key] = session
        while len(self.sessions) > KEEP:
            _, oldest = self.sessions.popitem(last=False)
            oldest.close()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        session = self.sessions.pop(context.context_id or "", None)
        if session is not None:
            await asyncio.to_thread(session.close)


def card(url: str) -> AgentCard:
    return AgentCard(
        name="castbench example A2A agent",
        description="Customer-service agent deciding with castbench's public scripted logic; "
        "its tools come over MCP from the conversation's first message.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        capabilities=AgentCapabilities(streaming=False),
        skills=[
            AgentSkill(
                id="customer-service",
                name="Customer service",
                description="Answers a customer, using the domain's tools over MCP.",
                tags=["castbench", "customer-service"],
            )
        ],
    )


def app(url: str, decider: Any) -> Starlette:
    agent_card = card(url)
    handler = DefaultRequestHandler(
        agent_executor=CastbenchExecutor(decider), task_store=InMemoryTaskStore(), agent_card=agent_card
    )
    return Starlette(routes=[*create_agent_card_routes(agent_card), *create_jsonrpc_routes(handler, "/")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9999, help="0: any free port")
    parser.add_argument(
        "--decider",
        default="castbench._agents.scripted.refusers:LookupRefusePolicy",
        help="module:Class deciding each action from the public briefing and the conversation",
    )
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    host, port = sock.getsockname()[:2]
    url = f"http://{host}:{port}/"
    server = uvicorn.Server(uvicorn.Config(app(url, reference._import(args.decider)), log_level="warning"))
    print(f"listening on a2a+http://{host}:{port}", flush=True)
    server.run(sockets=[sock])
    sys.exit(0)


if __name__ == "__main__":
    main()
