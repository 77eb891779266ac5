"""How castbench reaches an agent: every transport speaks the same protocol (`propose`, `verify`,
`open`/`reply`), so the trial loop does not know where the agent runs.

- `InProcessTransport`: built-ins, model-backed agents, privileged or `--in-process` agents.
- `WorkerTransport`: import-path agents, by default, each role in worker processes of its own.

A later service transport (HTTP, MCP) is one more class with `open` and `release`, chosen by
`connect` from the spec.
"""

from __future__ import annotations

from typing import Any, Protocol

from castbench.agents.registry import AgentSpec
from castbench.agents.transports.inprocess import InProcessTransport

__all__ = ["InProcessTransport", "Transport", "connect"]


class Transport(Protocol):
    isolated: bool
    """The agent runs outside castbench's process, and `open` enforces its own time limit."""

    def open(self, briefing: Any, timeout: float | None = None) -> Any:
        """The agent for one trial, implementing its role's protocol. A call that overruns
        `timeout` seconds raises `AgentTimeout`; an agent that crashes raises `AgentError`."""

    def release(self, agent: Any) -> None:
        """The trial is over (whatever its outcome)."""


def connect(spec: AgentSpec) -> Transport:
    if spec.transport == "worker":
        from castbench.agents.transports.worker import WorkerTransport

        return WorkerTransport(spec)
    return InProcessTransport(spec)
