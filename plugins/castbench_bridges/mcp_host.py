"""MCP servers for trials: one loopback HTTP server hosting any number of trials at once, each at
its own unguessable URL (`/trials/<token>/mcp`), and the stdio form for a single trial.

Isolation is by construction: a request reaches only the trial its URL names, every trial has
its own sandbox (its `Episode`), and a token is 128 random bits, so one agent cannot reach
another's trial. The HTTP transport is stateless with JSON answers (no session state or event
streams to keep per client): a tool call is one POST, answered by `McpEndpoint` (mcp_http.py).
"""

from __future__ import annotations

import secrets
import socket
import threading
from collections.abc import Callable
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from castbench_bridges.mcp_http import TRIAL_SCOPE_KEY, McpEndpoint
from castbench_bridges.mcp_trial import McpTrial

__all__ = ["McpHost", "build_server", "serve_stdio"]

Resolver = Callable[[Any], McpTrial]
"""The trial a request is for, from its handler context."""


class UnknownTrial(LookupError):
    """A URL naming no hosted trial (never created, or over and removed)."""


def build_server(resolve: Resolver, instructions: str | None = None) -> Server[Any]:
    """An MCP server whose handlers step the trial `resolve` picks for each request."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=resolve(ctx).tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await resolve(ctx).call_async(params)

    return Server("castbench", instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(trial: McpTrial) -> None:
    """Serve one trial over stdin/stdout until the client closes them."""
    server = build_server(lambda ctx: trial, trial.instructions())
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


class McpHost:
    """A loopback MCP server, in a thread of its own, for the trials added to it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, instructions: str | None = None) -> None:
        """`instructions`: what the server tells every client it serves (one trial's, when it
        serves one: `castbench mcp serve`; an agent service gets its briefing over HTTP)."""
        self._trials: dict[str, McpTrial] = {}
        self._lock = threading.Lock()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # accepted connections inherit it: without it a small answer waits on a delayed ACK (~40 ms)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.bind((host, port))
        self.host, self.port = self._socket.getsockname()[:2]
        app = McpEndpoint(build_server(self._resolve, instructions), self._lookup)
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", access_log=False, proxy_headers=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="castbench-mcp", daemon=True)

    def _run(self) -> None:
        self._server.run(sockets=[self._socket])

    def _lookup(self, token: str) -> McpTrial | None:
        with self._lock:
            return self._trials.get(token)

    @staticmethod
    def _resolve(ctx: Any) -> McpTrial:
        """The trial of a request the endpoint passed to the SDK (it found the trial first)."""
        trial = ctx.request.scope.get(TRIAL_SCOPE_KEY) if ctx.request is not None else None
        if trial is None:
            raise UnknownTrial("no such trial on this castbench MCP server (over, or never served)")
        return trial  # type: ignore[no-any-return]

    def start(self) -> McpHost:
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the MCP server on {self.host}:{self.port} did not start")
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> McpHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add(self, trial: McpTrial) -> str:
        """Serve `trial`; the URL of its MCP endpoint."""
        token = secrets.token_urlsafe(16)
        with self._lock:
            self._trials[token] = trial
        return f"http://{self.host}:{self.port}/trials/{token}/mcp"

    def remove(self, url: str) -> None:
        token = url.rstrip("/").split("/")[-2]
        with self._lock:
            self._trials.pop(token, None)
