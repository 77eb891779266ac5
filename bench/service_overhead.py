"""What the MCP and agent-service paths cost against the in-process path, in one run.

    python bench/service_overhead.py [--calls 300] [--tasks 12] [--trials 2]

1. MCP, per tool call: the same read call (`get_order_details` on a real order) stepped through
   one retail trial's `Episode` directly, then sent by an MCP client (the `mcp` package,
   streamable HTTP, in a process of its own as an agent's is) to castbench's MCP server for
   another trial of the same task. Medians; the difference is the MCP path's cost per call
   (client, HTTP, JSON-RPC, thread hop). Also the CPU time per call on either side, which does
   not depend on what else the machine runs (wall times on a shared machine do). A second line
   times a minimal JSON-RPC client instead (one bare POST per call, the stdlib's http.client):
   no agent uses one, it shows castbench's own share of the path. A third line: the SDK's
   client over stdio to `castbench mcp serve` (a local agent's usual set-up; a fresh server
   every 35 calls, as a served trial ends at its 40-step limit).
2. Agent service, per step: retail trials played by `scripted:lookup-refuse` in castbench's
   process, then by the same logic in the reference agent service (examples/agent_service,
   a subprocess: messages over HTTP, tools over MCP). Wall time per executed step, both ways;
   the difference is everything but the agent's own thinking (which is the same logic).
Prints the figures; no asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import mcp_types as types  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp_types.version import LATEST_MODERN_VERSION  # noqa: E402

from castbench._agents.registry import resolve  # noqa: E402
from castbench._base.conversation import ToolCallAction  # noqa: E402
from castbench._records.store import ResultsStore  # noqa: E402
from castbench._run.api import evaluate  # noqa: E402
from castbench._trial.episode import AgentSet, Episode, Limits  # noqa: E402
from castbench._trial.spec import TrialSpec  # noqa: E402
from castbench.domain import load_domain  # noqa: E402
from castbench_bridges.mcp_host import McpHost  # noqa: E402
from castbench_bridges.mcp_trial import McpTrial  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TASK = "retail-test-0002"
CALL = ("get_order_details", {"order_id": "#W3002897"})


def _episode() -> Episode:
    retail = load_domain("retail")
    task = retail.task(TASK)
    agents = AgentSet(None, resolve("user", "scripted"))
    episode = Episode(TrialSpec(retail, task, 0, 0, agents, retail.replay(task), Limits(max_steps=10**6)))
    episode.reset()
    return episode


def _in_process(calls: int) -> list[float]:
    episode, times = _episode(), []
    for _ in range(calls):
        start = time.perf_counter()
        episode.step(ToolCallAction(name=CALL[0], arguments=CALL[1]))
        times.append(time.perf_counter() - start)
    return times


async def _timed(calls: int, call: Callable[[], Awaitable[object]]) -> tuple[list[float], float]:
    """Each call's wall time, and the CPU time of this process over them all (after one warm-up
    call: connection and first-call set-up)."""
    await call()
    times = []
    cpu = time.process_time()
    for _ in range(calls):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return times, time.process_time() - cpu


async def _sdk_client(url: str, calls: int) -> tuple[list[float], float]:
    """The agent's side: the `mcp` SDK's client."""
    async with Client(url) as client:
        await client.list_tools()  # as an agent does first (a 2026 client re-lists a tool it has not seen)
        return await _timed(calls, lambda: client.call_tool(*CALL))


async def _minimal_client(url: str, calls: int) -> tuple[list[float], float]:
    """One bare 2026-07-28 `tools/call` POST per call on one kept-alive connection."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port)
    connection.connect()
    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    envelope = {
        types.PROTOCOL_VERSION_META_KEY: LATEST_MODERN_VERSION,
        types.CLIENT_CAPABILITIES_META_KEY: {},
    }
    params = {"name": CALL[0], "arguments": CALL[1], "_meta": envelope}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": LATEST_MODERN_VERSION,
        "mcp-method": "tools/call",
        "mcp-name": CALL[0],
    }

    async def call() -> None:
        connection.request("POST", parts.path, body.encode(), headers)
        answer = json.loads(connection.getresponse().read())
        assert not answer["result"]["isError"], answer

    return await _timed(calls, call)


_PER_TRIAL = 35
"""Calls per served trial over stdio: `castbench mcp serve` holds a trial to its 40-step limit."""


async def _stdio_client(calls: int) -> tuple[list[float], float]:
    """The `mcp` SDK's client over stdio to `castbench mcp serve` (the server a child of this
    process, one per `_PER_TRIAL` calls): call times and this process's CPU over them."""
    serve = "from castbench._cli.app import main; main()"
    times: list[float] = []
    cpu = 0.0
    while len(times) < calls:
        args = ["-c", serve, "mcp", "serve", "--domain", "retail", "--task", TASK, "--trial", "0"]
        params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))
        async with Client(params) as client:
            await client.list_tools()
            more, spent = await _timed(min(_PER_TRIAL, calls - len(times)), lambda: client.call_tool(*CALL))
        times += more
        cpu += spent
    return times, cpu


def _over_stdio(calls: int) -> tuple[list[float], float]:
    command = [sys.executable, __file__, "--stdio-client", "yes", "--calls", str(calls)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()
    return [float(value) for value in out[1:]], float(out[0]) / calls


def _over_mcp(calls: int, client: str) -> tuple[list[float], float, float]:
    """castbench's MCP server here, the client in a process of its own (as an agent's is): the
    call times, and the CPU time per call of the server's process and of the client's (what
    the path costs whatever else the machine is doing)."""
    with McpHost() as host:
        url = host.add(McpTrial(_episode()))
        command = [sys.executable, __file__, f"--{client}-client", url, "--calls", str(calls)]
        cpu = time.process_time()
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()
        server_cpu = time.process_time() - cpu
    return [float(value) for value in out[1:]], server_cpu / calls, float(out[0]) / calls


def _per_step(db: str, run_id: str) -> tuple[float, int]:
    records = ResultsStore(db).trials(run_id)
    steps = sum(len(record.steps) for record in records)
    return sum(record.duration_s for record in records) / steps, steps


def _agent_path(tasks: list[str], trials: int, folder: Path) -> tuple[float, float, int]:
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "agent_service" / "agent.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().split()[-1]
    try:
        options = {"domains": "retail", "tasks": tasks, "trials": trials, "seed": 5}
        local_db, service_db = f"sqlite:///{folder}/local.db", f"sqlite:///{folder}/service.db"
        local = evaluate(db=local_db, policy="scripted:lookup-refuse", **options)
        service = evaluate(db=service_db, policy=url, **options)
        local_step, steps = _per_step(local_db, local.outcome.run_id)
        service_step, _ = _per_step(service_db, service.outcome.run_id)
    finally:
        process.terminate()
        process.wait(timeout=10)
    return local_step, service_step, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--sdk-client", help=argparse.SUPPRESS)
    parser.add_argument("--minimal-client", help=argparse.SUPPRESS)
    parser.add_argument("--stdio-client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stdio_client:
        times, cpu = asyncio.run(_stdio_client(args.calls))
        print(f"{cpu:.6f}", " ".join(f"{t:.6f}" for t in times))
        return
    if args.sdk_client or args.minimal_client:
        client = _sdk_client if args.sdk_client else _minimal_client
        times, cpu = asyncio.run(client(args.sdk_client or args.minimal_client, args.calls))
        print(f"{cpu:.6f}", " ".join(f"{t:.6f}" for t in times))
        return
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    local = statistics.median(_in_process(args.calls)) * 1000
    print(f"MCP tool call ({args.calls} calls, {CALL[0]}): in-process step {local:.2f} ms median;")
    for client, label in (("sdk", "the mcp SDK's client"), ("minimal", "a minimal JSON-RPC client")):
        times, server_cpu, client_cpu = _over_mcp(args.calls, client)
        remote = statistics.median(times) * 1000
        print(
            f"  with {label}: {remote:.2f} ms median, overhead {remote - local:.2f} ms per call "
            f"({remote / local:.1f}x); CPU per call: server process {server_cpu * 1000:.2f} ms, "
            f"client {client_cpu * 1000:.2f} ms"
        )
    times, client_cpu = _over_stdio(args.calls)
    remote = statistics.median(times) * 1000
    print(
        f"  over stdio (`castbench mcp serve`) with the mcp SDK's client: {remote:.2f} ms median, "
        f"overhead {remote - local:.2f} ms per call ({remote / local:.1f}x); client CPU per call "
        f"{client_cpu * 1000:.2f} ms"
    )
    tasks = [task.id for task in load_domain("retail").tasks("test")[: args.tasks]]
    with tempfile.TemporaryDirectory() as folder:
        local_step, service_step, steps = _agent_path(tasks, args.trials, Path(folder))
    print(
        f"agent service ({len(tasks)} tasks x {args.trials} trials, {steps} steps): in-process "
        f"{local_step * 1000:.2f} ms per step, service {service_step * 1000:.2f} ms per step: overhead "
        f"{(service_step - local_step) * 1000:.2f} ms per step, ratio {service_step / local_step:.1f}x"
    )


if __name__ == "__main__":
    main()
