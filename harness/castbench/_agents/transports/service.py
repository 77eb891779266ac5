"""An agent service (`--policy http://...`, `a2a+http://...`) as a transport: the service holds
its policy and calls in, so instead of opening an agent the runner calls, its transport drives
the trial's episode with the actions that arrive (tool calls over MCP, replies over HTTP or A2A).

The driving code lives with the service (`castbench_bridges.agent_http`, which needs the
`service` extra) and is found through the entry-point group `castbench.drivers`, by the spec's
kind, so the agents layer imports none of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from castbench._agents.spec import AgentSpec

__all__ = ["ServiceTransport"]


@dataclass(frozen=True)
class ServiceTransport:
    spec: AgentSpec
    isolated = True
    drives = True

    def open(self, briefing: Any, timeout: float | None = None) -> Any:
        raise TypeError(f"the agent service '{self.spec.spec}' calls in: drive its episode instead")

    def release(self, agent: Any) -> None:
        """Nothing is opened: the driver closes its session when the episode ends."""

    def drive(self, episode: Any) -> None:
        """Run `episode` (which holds no policy) to its end with the service's actions."""
        _driver(self.spec.kind)(episode, self.spec)


def _driver(kind: str) -> Callable[[Any, AgentSpec], None]:
    found = entry_points(group="castbench.drivers", name=kind)
    if not found:
        raise RuntimeError(
            f"no episode driver for '{kind}' agents is installed (entry points castbench.drivers)"
        )
    driver: Callable[[Any, AgentSpec], None] = next(iter(found)).load()
    return driver
