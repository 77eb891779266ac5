"""What the MCP and agent-service paths cost against the in-process path, in one run.

    python bench/service_overhead.py [--calls 300] [--tasks 12] [--trials 2]

1. MCP, per tool call: the same read call (`get_order_details` on a real order) stepped through
   one retail trial's `Episode` directly, then sent by an MCP client (the `mcp` package,
   streamable HTTP, in a process of its own as an agent's is) to castbench's MCP server for
   another trial of the same task. Medians; the difference is the MCP path's cost per call
   (client, HTTP, JSON-RPC, thread hop). Also the CPU time per call on either side, which does
   not depend on what else the machine runs (wall times on a shared machine do).
2. Agent service, per step: retail trials played by `scripted:lookup-refuse` in castbench's
   process, then by the same logic in the reference agent service (examples/agent_service,
   a subprocess: messages over HTTP, tools over MCP). Wall time per executed step, both ways;
   the difference is everything but the agent's own thinking (which is the same logic).
Prints the figures; no asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mcp import Client  # noqa: E402

from castbench.agents.conversation import ToolCallAction  # noqa: E402
from castbench.agents.registry import resolve  # noqa: E402
from castbench.api import evaluate  # noqa: E402
from castbench.domain import load_domain  # noqa: E402
from castbench.runner.episode import AgentSet, Episode, Limits  # noqa: E402
from castbench.service.mcp_host import McpHost  # noqa: E402
from castbench.service.mcp_trial import McpTrial  # noqa: E402
from castbench.store import ResultsStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TASK = "retail-test-0002"
CALL = ("get_order_details", {"order_id": "#W3002897"})


def _episode() -> Episode:
    retail = load_domain("retail")
    task = retail.task(TASK)
    agents = AgentSet(None, resolve("user", "scripted"))
    episode = Episode(retail, task, 0, 0, agents, retail.replay(task), Limits(max_steps=10**6))
    episode.reset()
    return episode


def _in_process(calls: int) -> list[float]:
    episode, times = _episode(), []
    for _ in range(calls):
        start = time.perf_counter()
        episode.step(ToolCallAction(name=CALL[0], arguments=CALL[1]))
        times.append(time.perf_counter() - start)
    return times


async def _client(url: str, calls: int) -> tuple[list[float], float]:
    """The agent's side: an MCP client timing each call; and its CPU time over them."""
    times = []
    async with Client(url) as client:
        await client.list_tools()  # as an agent does first (a 2026 client re-lists a tool it has not seen)
        await client.call_tool(*CALL)  # warm: connection and first-call set-up
        cpu = time.process_time()
        for _ in range(calls):
            start = time.perf_counter()
            await client.call_tool(*CALL)
            times.append(time.perf_counter() - start)
    return times, time.process_time() - cpu


def _over_mcp(calls: int) -> tuple[list[float], float, float]:
    """castbench's MCP server here, the client in a process of its own (as an agent's is): the
    call times, and the CPU time per call of the server's process and of the client's (what
    the path costs whatever else the machine is doing)."""
    with McpHost() as host:
        url = host.add(McpTrial(_episode()))
        command = [sys.executable, __file__, "--mcp-client", url, "--calls", str(calls)]
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
    parser.add_argument("--mcp-client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mcp_client:
        times, cpu = asyncio.run(_client(args.mcp_client, args.calls))
        print(f"{cpu:.6f}", " ".join(f"{t:.6f}" for t in times))
        return
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    local = statistics.median(_in_process(args.calls)) * 1000
    times, server_cpu, client_cpu = _over_mcp(args.calls)
    remote = statistics.median(times) * 1000
    print(f"MCP tool call ({args.calls} calls, {CALL[0]}): in-process step {local:.2f} ms median,")
    overhead = remote - local
    print(f"  over MCP {remote:.2f} ms median: overhead {overhead:.2f} ms per call ({remote / local:.1f}x);")
    print(f"  CPU per call: server process {server_cpu * 1000:.2f} ms, client {client_cpu * 1000:.2f} ms")
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
