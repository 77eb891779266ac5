"""`castbench mcp serve`: one trial's sandbox as an MCP server, for an agent that is an MCP client.

The agent gets the domain's tools and `respond_to_user` (its message to the simulated customer,
who answers); the customer's first message and the domain policy are in the server's
instructions. The agent ends the conversation with a closing `respond_to_user` (its
`end_conversation` set) or, over stdio, by closing the session after its work: the trial ends as
`agent_stop`. When the trial ends, or the server stops, its graded record is written to
`--record` (JSON, as `eval` stores it).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from castbench._base import lossless
from castbench._cli.checks import check_writable
from castbench._cli.errors import fail
from castbench._run.options import DEFAULTS

mcp_app = typer.Typer(help="Domain tools over MCP.", no_args_is_help=True)


@mcp_app.command("serve")
def serve(
    domain: Annotated[str, typer.Option(help="Domain name (castbench domains list).")],
    task: Annotated[str, typer.Option(help="Task id.")],
    trial: Annotated[
        int, typer.Option(min=0, help="Trial index (with --seed: the trial's seed, as in eval).")
    ] = 0,
    seed: Annotated[
        int, typer.Option(help="Run seed, as `castbench eval --seed`.")
    ] = DEFAULTS.selection.seed,
    critic: Annotated[
        str, typer.Option(help="Critic that verifies each call before it runs.")
    ] = DEFAULTS.agents.critic,
    user: Annotated[str, typer.Option(help="Simulated user.")] = DEFAULTS.agents.user,
    transport: Annotated[Literal["stdio", "http"], typer.Option(help="MCP transport.")] = "stdio",
    host: Annotated[str, typer.Option(help="Interface for --transport http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for --transport http (0: any free one).")] = 0,
    record: Annotated[Path | None, typer.Option(help="Write the graded trial record here (JSON).")] = None,
) -> None:
    """Serve one trial's tools over MCP (stdio, or streamable HTTP at the printed URL)."""
    if record is not None:  # before the trial: its record must not be lost at the end
        check_writable("--record", record)
    try:
        import anyio

        from castbench._run.environment import Environment
        from castbench_bridges.mcp_host import McpHost, serve_stdio
        from castbench_bridges.mcp_trial import McpTrial
    except ImportError as exc:
        fail(f"castbench mcp needs the service extra (pip install 'castbench[service]'): {exc}")
    try:
        env = Environment(user=user, critic=critic)
        env.reset(domain, task, trial, seed)
    except (KeyError, ValueError, LookupError) as exc:
        fail(exc)
    assert env.episode is not None
    served = McpTrial(env.episode, respond_tool=True)
    try:
        if transport == "stdio":
            anyio.run(serve_stdio, served)
            env.episode.stop()  # the client closed the session: it ended the conversation itself
        else:
            with McpHost(host, port, served.instructions()) as mcp_host:
                print(mcp_host.add(served), flush=True)
                env.episode.ended.wait()
    except KeyboardInterrupt:
        pass
    finished = env.episode.record()
    if record is not None:
        record.write_text(lossless.dumps(finished))
    print(f"trial ended: {finished.end_reason}, reward {finished.reward}", file=sys.stderr)
