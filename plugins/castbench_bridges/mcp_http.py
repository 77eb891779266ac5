"""castbench's streamable-HTTP MCP endpoint: a tool call answered directly, every other request by
the `mcp` SDK.

A tool call is the one request an agent makes at every step. The SDK's stateless entry spends
several milliseconds of CPU on one: it runs the server's whole `tools/list` handler to look up
the called tool's schema, then a per-request connection, middleware chain and tracing span
around the handler. The direct path answers a 2026-07-28 `tools/call` that passes every check
the SDK's own entry makes (the same SDK functions run them, in the SDK's order) and shapes the
result with the SDK's own serializer. Any request that fails one of those checks, and every
other request (discovery, `tools/list`, the 2025 `initialize` handshake, GET, DELETE, ...), is
replayed unchanged to the SDK's handler: every error and every other answer on the wire is the
SDK's own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecurityMiddleware
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_METHOD_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp_types import methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from castbench_bridges.mcp_trial import McpTrial

__all__ = ["TRIAL_SCOPE_KEY", "McpEndpoint"]

TRIAL_SCOPE_KEY: Final = "castbench.trial"
"""Where a request's ASGI scope carries the trial its URL names (the SDK's handlers read it)."""

_SECURITY = TransportSecurityMiddleware(None)
_VERSION_HEADER, _METHOD_HEADER = MCP_PROTOCOL_VERSION_HEADER.encode(), MCP_METHOD_HEADER.encode()
_NOT_FOUND = json.dumps(
    {"jsonrpc": "2.0", "id": None, "error": {"code": types.INVALID_REQUEST, "message": "No such trial"}}
).encode()


class McpEndpoint:
    """The ASGI app of `/trials/<token>/mcp`: `lookup(token)` is the trial a token names, if any."""

    def __init__(self, server: Server[Any], lookup: Callable[[str], McpTrial | None]) -> None:
        self._server = server
        self._lookup = lookup
        self._manager = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        parts = scope["path"].split("/")  # "", "trials", token, "mcp"
        routed = len(parts) == 4 and parts[1] == "trials" and parts[3] == "mcp"
        trial = self._lookup(parts[2]) if routed else None
        if trial is None:  # never created, or over and removed: the URL names nothing
            await _respond(send, 404, _NOT_FOUND)
            return
        scope[TRIAL_SCOPE_KEY] = trial
        body = await self._direct_body(scope, receive)
        if body is None or not await self._answer_call(trial, body, scope, send):
            await self._manager.handle_request(scope, _replay(body, receive), send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        async with self._manager.run():
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})

    @staticmethod
    async def _direct_body(scope: Scope, receive: Receive) -> bytes | None:
        """The body of a request the direct path may answer (its headers say it is a 2026
        `tools/call` POST of a declared, allowed size); None, unread, for any other."""
        if scope["method"] != "POST":
            return None
        headers = dict(scope["headers"])
        version = headers.get(_VERSION_HEADER, b"").decode("latin-1")
        if version not in MODERN_PROTOCOL_VERSIONS or headers.get(_METHOD_HEADER) != b"tools/call":
            return None
        length = headers.get(b"content-length", b"")
        if not length.isdigit() or int(length) > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return None
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                return body

    async def _answer_call(self, trial: McpTrial, body: bytes, scope: Scope, send: Send) -> bool:
        """Answer a tool call that passes the SDK's checks; False (nothing sent) for any other."""
        request = Request(scope)
        if await _SECURITY.validate_request(request, is_post=True) is not None:
            return False
        if not check_accept_headers(request)[0]:
            return False
        try:
            decoded = json.loads(body)
            message = types.JSONRPCRequest.model_validate(decoded)
        except (ValueError, RecursionError):  # ValidationError is a ValueError
            return False
        if "id" not in decoded or message.method != "tools/call":
            return False
        if find_duplicated_routing_header(request.headers.items()) is not None:
            return False
        route = classify_inbound_request(decoded, headers=dict(request.headers))
        if not isinstance(route, InboundModernRoute):
            return False
        try:
            methods.validate_client_request("tools/call", route.protocol_version, message.params)
            params = types.CallToolRequestParams.model_validate(message.params, by_name=False)
        except (ValueError, KeyError):  # a ValidationError, or a version the surface lacks
            return False
        schema = trial.input_schema(params.name)
        if schema is not None and validate_mcp_param_headers(schema, params.arguments or {}, request.headers):
            return False
        try:
            result = self._result(route.protocol_version, await trial.call_async(params))
        except Exception as exc:  # the SDK's mapping: handler internals never reach the wire
            error = modern_error_data(exc)
            reply: types.JSONRPCResponse | types.JSONRPCError = types.JSONRPCError(
                jsonrpc="2.0", id=message.id, error=error
            )
            status = ERROR_CODE_HTTP_STATUS.get(error.code, 200)
        else:
            reply, status = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result), 200
        answer = reply.model_dump(mode="json", by_alias=True, exclude_none=True)
        await _respond(send, status, json.dumps(answer, separators=(",", ":")).encode())
        return True

    def _result(self, version: str, result: types.CallToolResult) -> dict[str, Any]:
        """The result's wire form, as the SDK's server shapes a 2026 tool call's: sieved by the
        version's surface (which sets `resultType`) and stamped with the server's identity."""
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        dumped = methods.serialize_server_result("tools/call", version, dumped)
        meta: Mapping[str, Any] = dumped.get("_meta") or {}
        if meta.get(types.SERVER_INFO_META_KEY) is None:  # a handler-authored stamp wins, as in the SDK
            dumped["_meta"] = {**meta, types.SERVER_INFO_META_KEY: self._server.server_info_stamp}
        return dumped


def _replay(body: bytes | None, receive: Receive) -> Receive:
    """`receive` as the SDK expects it: a body the direct path read comes first."""
    if body is None:
        return receive
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


async def _respond(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
