"""Agents that run inside castbench's own process: the built-ins (the only ones that may read a
`PrivilegedBriefing`), model-backed agents, import-path agents that declare themselves
privileged, and any import-path agent under `--in-process` (debugging; the run records it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from castbench._agents.spec import AgentSpec

__all__ = ["InProcessTransport"]


@dataclass(frozen=True)
class InProcessTransport:
    spec: AgentSpec
    isolated = False
    drives = False

    def open(self, briefing: Any, timeout: float | None = None) -> Any:
        """The instance itself: its calls are direct (a time limit here is the trial loop's)."""
        return self.spec.create(briefing)

    def release(self, agent: Any) -> None:
        """Nothing to give back: the instance goes when the trial drops it."""
