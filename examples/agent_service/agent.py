"""A reference agent service for castbench's agent protocol (docs/agent-service.md): plain Python,
offline, no model. It serves the protocol over HTTP, uses each trial's tools through the MCP
server castbench names, and decides with castbench's public scripted logic (by default
`scripted:lookup-refuse`, which sees only the public briefing and the conversation).

    python examples/agent_service/agent.py --port 8765
    castbench eval --domains retail --policy http://127.0.0.1:8765/agent --trials 8

Replace the decider (`--decider module:Class`) with your own graph (LangGraph, OpenAI Agents,
...): what it must do is answer each message of the customer, calling the MCP tools as it
needs, with one reply.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import socket
import sys
import threading
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from castbench.agents import (
    AGENT_STOP,
    AgentTurn,
    Briefing,
    CritiqueTurn,
    Event,
    PolicyView,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
    Verdict,
)

ENDED = "This conversation has ended"
"""How castbench's MCP server begins a tool result once the trial is over."""


class _Loop:
    """One event loop in a thread, where every session's MCP client lives, and one HTTP client
    they share (building one per session costs more than the session's tool calls)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.http: httpx2.AsyncClient = self.run(self._http())

    async def _http(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0))

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()


class Session:
    """One trial: the decider, the conversation it has seen, and the MCP client to its tools."""

    def __init__(self, body: dict[str, Any], decider: Any, loop: _Loop) -> None:
        b = body["briefing"]
        self.briefing = Briefing(
            b["domain"],
            b["policy"],
            tuple(b["tools"]),
            frozenset(b["write_tools"]),
            b["seed"],
            b["trial_index"],
        )
        self.decider = decider(self.briefing)
        self.events: list[Event] = []
        self.critiques: list[Event] = []
        """Critiques of the proposal being revised: in the view until a proposal runs."""
        self.loop = loop
        self._connected = threading.Event()
        self._held = asyncio.run_coroutine_threadsafe(self._hold(body["mcp_url"]), loop.loop)
        self._connected.wait()
        if self._held.done():  # it could not connect: say why
            self._held.result()

    async def _hold(self, url: str) -> None:
        """The MCP client lives in one task from connecting to closing (its scopes need that)."""
        self._closing = asyncio.Event()
        try:
            async with Client(streamable_http_client(url, http_client=self.loop.http)) as client:
                self.mcp = client
                self._connected.set()
                await self._closing.wait()
        finally:
            self._connected.set()

    def _steps(self) -> int:
        return sum(isinstance(event, AgentTurn) for event in self.events)

    def answer(self, message: dict[str, Any]) -> str:
        """Act until the decider replies: each tool call goes to castbench over MCP."""
        if message["role"] == "user":
            self.events.append(UserTurn(text=message["content"]))
        else:  # the critic rejected the last reply: it is revised, with the critique in view
            rejected = self.events.pop()
            assert isinstance(rejected, AgentTurn)
            verdict = Verdict.model_validate(message["verdict"])
            self.critiques.append(CritiqueTurn(verdict=verdict, proposal=rejected.action))
        while True:
            view = PolicyView(self.briefing, tuple(self.events + self.critiques))
            action = self.decider.propose(view)
            if not isinstance(action, ToolCallAction):
                text = action.text if isinstance(action, ReplyAction) else ""
                if isinstance(action, ReplyAction) and action.end and AGENT_STOP not in text:
                    text = f"{text} {AGENT_STOP}"  # the protocol's closing message: the marker
                self.critiques = []
                self.events.append(AgentTurn(action=ReplyAction(text=text)))
                return text
            call_id = f"call_{self._steps()}"
            result = self.loop.run(self.mcp.call_tool(action.name, action.arguments))
            content = "".join(getattr(block, "text", "") for block in result.content)
            if result.is_error and content.startswith(ENDED):
                return ""
            verdict = (result.structured_content or {}).get("verdict") if result.is_error else None
            if verdict is not None:  # rejected, not run: revise with the critique in view
                self.critiques.append(CritiqueTurn(verdict=Verdict.model_validate(verdict), proposal=action))
                continue
            self.critiques = []
            self.events += [
                AgentTurn(action=action, call_id=call_id),
                ToolResultTurn(
                    call_id=call_id, name=action.name, content=content, error=bool(result.is_error)
                ),
            ]

    def close(self) -> None:
        self.loop.loop.call_soon_threadsafe(self._closing.set)
        self._held.result(timeout=10)


def make_handler(decider: Any, loop: _Loop, prefix: str) -> type[BaseHTTPRequestHandler]:
    sessions: dict[str, Session] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _path(self) -> list[str]:
            path = self.path.split("?")[0]
            if not path.startswith(prefix):
                return []
            return [part for part in path[len(prefix) :].split("/") if part]

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            parts = self._path()
            if parts == ["sessions"]:
                session = Session(body, decider, loop)
                with lock:
                    sessions[body["session_id"]] = session
                self._send(200, {})
            elif len(parts) == 3 and parts[0] == "sessions" and parts[2] == "messages":
                with lock:
                    session = sessions.get(parts[1])
                if session is None:
                    self._send(404, {"error": "no such session"})
                    return
                self._send(200, {"reply": session.answer(body)})
            else:
                self._send(404, {"error": f"no route {self.path}"})

        def do_DELETE(self) -> None:
            parts = self._path()
            with lock:
                session = sessions.pop(parts[1], None) if len(parts) == 2 else None
            if session is not None:
                session.close()
            self._send(200, {})

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self) -> None:
        """No Nagle delay: an answer written in two parts would wait ~40 ms for a delayed ACK."""
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().server_bind()


def _import(path: str) -> Any:
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0: any free port")
    parser.add_argument("--path", default="/agent")
    parser.add_argument(
        "--decider",
        default="castbench._agents.scripted.refusers:LookupRefusePolicy",
        help="module:Class deciding each action from the public briefing and the conversation",
    )
    args = parser.parse_args()
    server = Server((args.host, args.port), make_handler(_import(args.decider), _Loop(), args.path))
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}{args.path}", flush=True)
    with suppress(KeyboardInterrupt):
        server.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
