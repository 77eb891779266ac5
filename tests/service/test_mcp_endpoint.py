"""castbench's streamable-HTTP MCP endpoint: a tool call answered directly is the `mcp` SDK's own
answer byte for byte; every other request (and every malformed one) gets the SDK's answer; a
call that waits on a critic holds up no other trial."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp", reason="MCP: pip install -e '.[service]'")
pytestmark = pytest.mark.extra("service")

import mcp_types as types  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager  # noqa: E402
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_MODERN_VERSION  # noqa: E402

from castbench._base.conversation import ToolCallAction  # noqa: E402
from castbench._trial.episode import Episode  # noqa: E402
from castbench_bridges.mcp_host import McpHost, build_server  # noqa: E402
from castbench_bridges.mcp_http import McpEndpoint  # noqa: E402
from castbench_bridges.mcp_trial import McpTrial  # noqa: E402
from tests.service import gated  # noqa: E402

TASK = "retail-test-0002"
ORDER = {"order_id": "#W3002897"}
META = {types.PROTOCOL_VERSION_META_KEY: LATEST_MODERN_VERSION, types.CLIENT_CAPABILITIES_META_KEY: {}}


def _request(method: str, params: dict[str, Any], **headers: str) -> tuple[bytes, dict[str, str]]:
    """A 2026-07-28 request as the SDK's client sends it (the envelope in `_meta`, the routing
    headers), with `headers` overriding."""
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": META}}
    sent = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": LATEST_MODERN_VERSION,
        "mcp-method": method,
    }
    if "name" in params:
        sent["mcp-name"] = params["name"]
    return json.dumps(body).encode(), {**sent, **headers}


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("get_order_details", ORDER),  # a result
        ("get_order_details", {}),  # the agent's bad arguments: a tool error
        ("launch_rocket", {}),  # a tool the domain lacks
    ],
)
def test_a_tool_call_is_answered_directly_as_the_sdk_answers_it(
    open_episode: Callable[..., Episode], name: str, arguments: dict[str, Any]
) -> None:
    """The same call to two trials of one task: one through the SDK's own stateless server,
    one through castbench's endpoint over a server with no handlers at all (so only the direct
    path can answer it): the same status and the same bytes."""
    body, headers = _request("tools/call", {"name": name, "arguments": arguments})
    through_sdk, direct = McpTrial(open_episode(TASK)), McpTrial(open_episode(TASK))
    manager = StreamableHTTPSessionManager(
        app=build_server(lambda ctx: through_sdk), json_response=True, stateless=True
    )
    endpoint = McpEndpoint(Server("castbench"), lambda token: direct)

    async def post(app: Any) -> httpx.Response:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test"
        ) as client:
            return await client.post("/trials/token/mcp", content=body, headers=headers)

    async def both() -> tuple[httpx.Response, httpx.Response]:
        async with manager.run():
            return await post(manager.handle_request), await post(endpoint)

    expected, answer = asyncio.run(both())
    assert (answer.status_code, answer.content) == (expected.status_code, expected.content)
    assert answer.json()["result"]["content"]
    (step,) = direct.episode.steps
    assert step.action == ToolCallAction(name=name, arguments=arguments)


def _post(url: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(url, content=body, headers=headers, timeout=30)


def _order_call(arguments: object = ORDER, **headers: str) -> tuple[bytes, dict[str, str]]:
    return _request("tools/call", {"name": "get_order_details", "arguments": arguments}, **headers)


@pytest.mark.parametrize(
    "request_, status, code",
    [
        (_request("tools/frobnicate", {}), 404, types.METHOD_NOT_FOUND),
        (_order_call(**{"mcp-name": "cancel_pending_order"}), 400, types.HEADER_MISMATCH),
        (_order_call(["#W3002897"]), 400, types.INVALID_PARAMS),
        (_order_call(**{"mcp-protocol-version": "2099-01-01"}), 400, types.HEADER_MISMATCH),
        ((b"{not json", _order_call()[1]), 400, types.PARSE_ERROR),
    ],
    ids=["unknown-method", "name-header-mismatch", "arguments-not-an-object", "version-mismatch", "bad-json"],
)
def test_a_request_off_the_direct_path_gets_the_sdks_json_rpc_error_and_runs_nothing(
    open_episode: Callable[..., Episode], request_: tuple[bytes, dict[str, str]], status: int, code: int
) -> None:
    trial = McpTrial(open_episode(TASK))
    with McpHost() as host:
        answer = _post(host.add(trial), *request_)
    assert answer.status_code == status
    assert answer.json()["error"]["code"] == code
    assert trial.episode.steps == []


def test_get_is_405_a_notification_202_and_an_unknown_trial_404(open_episode: Callable[..., Episode]) -> None:
    with McpHost() as host:
        url = host.add(McpTrial(open_episode(TASK)))
        got = httpx.get(url, headers={"mcp-protocol-version": LATEST_MODERN_VERSION}, timeout=30)
        body, headers = _request("notifications/cancelled", {"requestId": 1})
        notification = {k: v for k, v in json.loads(body).items() if k != "id"}
        notified = _post(url, json.dumps(notification).encode(), headers)
        host.remove(url)
        gone = _post(url, *_order_call())
    assert got.status_code == 405 and got.headers["allow"] == "POST"
    assert notified.status_code == 202
    assert gone.status_code == 404 and gone.json()["error"]["message"] == "No such trial"


def test_a_client_of_the_2025_handshake_is_served_too(open_episode: Callable[..., Episode]) -> None:
    """The `initialize` handshake era goes to the SDK's stateless legacy path: same tools, and
    the call is stepped and recorded in the trial."""
    trial = McpTrial(open_episode(TASK))

    async def session(url: str) -> tuple[str, list[str], types.CallToolResult]:
        async with Client(url, mode="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            return client.protocol_version, names, await client.call_tool("get_order_details", ORDER)

    with McpHost() as host:
        version, names, result = asyncio.run(session(host.add(trial)))
    assert version in HANDSHAKE_PROTOCOL_VERSIONS
    assert names == [tool.name for tool in trial.tools]
    assert not result.is_error and "#W3002897" in result.content[0].text  # type: ignore[union-attr]
    (step,) = trial.episode.steps
    assert step.action == ToolCallAction(name="get_order_details", arguments=ORDER)


def test_a_call_waiting_on_a_critic_holds_up_no_other_trial(open_episode: Callable[..., Episode]) -> None:
    """A trial's critic (here one that waits for the test) verifies off the server's event loop:
    another trial's call is answered meanwhile (on the event loop it would wait for the critic,
    and the test would time out)."""
    gated.ENTERED.clear()
    gated.RELEASE.clear()
    verified = McpTrial(open_episode(TASK, "tests.service.gated:GatedCritic"))
    plain = McpTrial(open_episode(TASK))

    async def call(url: str) -> types.CallToolResult:
        async with Client(url) as client:
            return await client.call_tool("get_order_details", ORDER)

    async def meanwhile(waiting_url: str, plain_url: str) -> types.CallToolResult:
        waiting = asyncio.create_task(call(waiting_url))
        assert await asyncio.to_thread(gated.ENTERED.wait, 30)
        try:
            answered = await asyncio.wait_for(call(plain_url), 30)
            assert not waiting.done()
        finally:
            gated.RELEASE.set()
        await waiting
        return answered

    with McpHost() as host:
        result = asyncio.run(meanwhile(host.add(verified), host.add(plain)))
    assert not result.is_error
    assert len(plain.episode.steps) == 1 and len(verified.episode.steps) == 1
