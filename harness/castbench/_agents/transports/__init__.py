"""How castbench reaches an agent: every transport speaks the same protocol (`propose`, `verify`,
`open`/`reply`), so the trial loop does not know where the agent runs.

- `InProcessTransport`: built-ins, model-backed agents, privileged or `--in-process` agents.
- `WorkerTransport`: import-path agents, by default, each role in worker processes of its own.
- `ServiceTransport`: an agent service (`--policy http://...`, `a2a+http://...`): it is not
  called but calls in, so its transport drives the trial's episode instead of opening an agent.

Which one a role gets is not decided here: the run's execution plan
(`castbench._records.execution`) says per role how its calls run (`AgentCall`), and `connect`
follows it.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from castbench._agents.spec import AgentSpec
from castbench._agents.transports.inprocess import InProcessTransport

__all__ = ["AgentCall", "CallMode", "DrivingTransport", "InProcessTransport", "Transport", "connect"]

CallMode = Literal["inline", "loop", "agent-thread", "worker", "service"]
"""How a call into one role's agent runs:
- `inline`: on the trial's own thread (castbench's scripted agents: they never block);
- `loop`: awaited on the model loop the trial runs on (`castbench._agents.models.loop`);
- `agent-thread`: on the trial's agent thread, so the trial can stop waiting for it;
- `worker`: in a worker process of the agent's own, waited for on the agent thread;
- `service`: the agent calls in (an agent service), its transport drives the episode."""


class AgentCall(BaseModel):
    """How one role's agent is called in a run, and why (one line)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: CallMode
    why: str


class Transport(Protocol):
    isolated: bool
    """The agent runs outside castbench's process, and `open` enforces its own time limit."""
    drives: bool
    """The agent is not called but calls in: `drive(episode)` steps the trial (`DrivingTransport`)
    and `open` is never called."""

    def open(self, briefing: Any, timeout: float | None = None) -> Any:
        """The agent for one trial, implementing its role's protocol. A call that overruns
        `timeout` seconds raises `AgentTimeout`; an agent that crashes raises `AgentError`."""

    def release(self, agent: Any) -> None:
        """The trial is over (whatever its outcome)."""


class DrivingTransport(Transport, Protocol):
    def drive(self, episode: Any) -> None:
        """Run `episode` (a `castbench._trial.episode.Episode` without a policy) to its end with
        the actions the agent sends."""


def connect(spec: AgentSpec, call: AgentCall) -> Transport:
    """The transport the run's plan chose for the role `spec` plays."""
    if call.mode == "worker":
        from castbench._agents.transports.worker import WorkerTransport

        return WorkerTransport(spec)
    if call.mode == "service":
        from castbench._agents.transports.service import ServiceTransport

        return ServiceTransport(spec)
    return InProcessTransport(spec)
