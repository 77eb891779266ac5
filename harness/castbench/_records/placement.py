"""Where one role's agent ran (`AgentPlacement`): the part of a run's provenance that is part of
the run's identity, recorded in its `RunConfig` (`placement`).

A module of its own, below the run's configuration: `castbench._records.provenance` reads a
`RunConfig` to derive and check placements, and the config holds them, so the model lives here
and both import it (`castbench._records.provenance` names it too, where it was first defined).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from castbench._agents.needs import SandboxNeeds

__all__ = ["AgentPlacement", "PlacementKind"]

PlacementKind = Literal["builtin", "sandboxed", "unsandboxed", "in-process", "privileged", "service", "model"]
"""- `builtin`: castbench's own code, in castbench's process (may read the ground truth if privileged);
- `sandboxed`: an import-path agent in a worker process behind the OS sandbox;
- `unsandboxed`: an import-path agent in a worker process without one (the reason is recorded);
- `in-process`: an import-path agent inside castbench's process (`--in-process`, debugging);
- `privileged`: an import-path agent that declared privilege, inside castbench's process;
- `service`: an agent service at a URL (castbench's agent protocol);
- `model`: a model castbench calls (a model string, or a chat-completions URL)."""

_PLACES: dict[str, str] = {
    "builtin": "built-in",
    "sandboxed": "sandboxed",
    "unsandboxed": "unsandboxed",
    "in-process": "in castbench's process",
    "privileged": "privileged, in castbench's process",
    "service": "agent service",
    "model": "model",
}


class AgentPlacement(BaseModel):
    """Where one role's agent ran."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    """What ran: a built-in name, an import path (`module:Class`), a URL or a model string."""
    where: PlacementKind
    detail: str = ""
    """`sandboxed`: the mechanism (`landlock ABI 7`); `unsandboxed`: why not; `service`: the URL;
    `model`: the model string, and the server castbench called it at."""
    privileged: bool = False
    """It read the ground truth (a privileged built-in, or an import path declaring `privileged`)."""
    needs: SandboxNeeds | None = None
    """`sandboxed`: what the agent declared it needs beyond the strictest sandbox (environment
    variables, TCP ports, paths to read), when it declared any."""

    def describe(self) -> str:
        """One phrase: `castbench built-in 'oracle' (in castbench's process), privileged`."""
        imported = f"import-path agent '{self.agent}'"
        text = {
            "builtin": f"castbench built-in '{self.agent}' (castbench's own code, in castbench's process)",
            "sandboxed": f"{imported}, sandboxed in a worker process ({self.detail}{self._needs()})",
            "unsandboxed": f"{imported}, in an unsandboxed worker process ({self.detail})",
            "in-process": f"{imported}, inside castbench's process (--in-process)",
            "privileged": f"{imported}, inside castbench's process (declared privileged)",
            "service": f"agent service at {self.detail or self.agent}",
            "model": f"model {self.detail or self.agent} called by castbench" + self._as(),
        }[self.where]
        return text + (", privileged: read the ground truth" if self.privileged else "")

    def _needs(self) -> str:
        """`; declared env OPENAI_API_KEY, port 8000, read /models`: what its sandbox lets through
        (a few of each kind and a count: the cell stays small), then what that leaves unsandboxed."""
        if self.needs is None or self.needs.empty:
            return ""
        opened = f"; unsandboxed for {', '.join(self.needs.opened)}" if self.needs.opened else ""
        return "; declared " + self.needs.summary() + opened

    @property
    def unsandboxed_for(self) -> tuple[str, ...]:
        """The resources a sandboxed agent's declaration opened (`filesystem`, `tcp`, `udp`)."""
        if self.where != "sandboxed" or self.needs is None:
            return ()
        return self.needs.opened

    def _as(self) -> str:
        """` (as 'tau')` for a model-backed built-in or a chat-completions URL."""
        return "" if not self.detail or self.detail.startswith(self.agent) else f" (as '{self.agent}')"

    def short(self) -> str:
        """A table cell: `built-in`, `sandboxed (landlock ABI 7)`, `unsandboxed`, ... (`†` privileged)."""
        place = _PLACES[self.where]
        if self.where == "sandboxed" and self.detail:
            place += f" ({self.detail}{self._needs()})"
        return place + (" †" if self.privileged and self.where != "privileged" else "")
