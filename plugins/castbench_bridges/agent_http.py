"""The agent as a service: castbench drives one trial's conversation over HTTP while the agent
uses the trial's tools over MCP (the castbench agent protocol, version 1; docs/agent-service.md).

    POST {url}/sessions                  {"session_id", "mcp_url", "briefing": {...public...}}
    POST {url}/sessions/{id}/messages    {"role": "user" | "critic", "content": "...", ["verdict": {...}]}
                                         -> {"reply": "..."}  (after any tool calls over MCP)
    DELETE {url}/sessions/{id}           the trial is over

The briefing is the public one, as a worker process gets it (`briefing_to_wire`: domain, policy
document, tool schemas, write tools, seed, trial index; a privileged one cannot be sent): the
agent's process never holds task data. The simulated user, the critic and the grader are the
episode's, as in every run. The agent failing (an HTTP error, an answer that is not the
protocol's) ends its trial as `agent_error`; overrunning the step or trial time limit ends it as
`timeout`, as for any agent; the run goes on. A service that is not there is no answer of the
agent's: a connection refused or dropped leaves the trial unscored (`infra_error`, retried, then
resumable), and each service has a circuit breaker like a model server's
(`castbench._agents.models.breaker`): checked before the first trial (`check_service`), and after
`THRESHOLD` connection failures in a row the run stops with `ServerDown`, finished trials kept.
"""

from __future__ import annotations

import threading
from typing import Any

from castbench._agents.registry import AgentSpec
from castbench._base.conversation import CritiqueTurn, UserTurn
from castbench._trial.episode import Episode, EpisodeOver
from castbench_bridges.agent_session import PROTOCOL, AgentSession, ServiceFailed, shared_client
from castbench_bridges.mcp_host import McpHost
from castbench_bridges.mcp_trial import McpTrial, critique_text, verdict_json

__all__ = ["PROTOCOL", "drive_service", "shared_host"]

_HOST: McpHost | None = None
_HOST_LOCK = threading.Lock()


def shared_host() -> McpHost:
    """The process's loopback MCP server, started on first use; trials come and go on it."""
    global _HOST
    with _HOST_LOCK:
        if _HOST is None:
            _HOST = McpHost().start()
        return _HOST


def _session(episode: Episode, spec: AgentSpec) -> AgentSession:
    """The trial's session with the agent: castbench's agent protocol, or A2A (`a2a+http://`)."""
    if spec.transport == "a2a":
        from castbench_bridges.a2a_policy import A2ASession  # a2a-sdk: only for A2A agents

        return A2ASession(episode, spec)
    return AgentSession(episode, spec, shared_client())


def drive_service(episode: Episode, spec: AgentSpec) -> None:
    """Run `episode` to its end with the agent service `spec` names as its policy."""
    view = episode.reset()
    host = shared_host()
    trial = McpTrial(episode)
    url = host.add(trial)
    session = _session(episode, spec)
    try:
        if view is None:
            return
        session.open(url)
        message: dict[str, Any] = {"role": "user", "content": episode.opening}
        while not episode.done:
            reply = session.say(message)
            try:
                observation = trial.step(reply).observation
            except EpisodeOver:  # a tool call ended it (a transfer, the step limit, a failing critic)
                break
            if isinstance(observation, CritiqueTurn):
                verdict = observation.verdict
                message = {
                    "role": "critic",
                    "content": critique_text(verdict),
                    "verdict": verdict_json(verdict),
                }
            elif isinstance(observation, UserTurn):
                message = {"role": "user", "content": observation.text}
    except ServiceFailed as exc:
        episode.fail(exc.reason, str(exc))  # type: ignore[arg-type]
    finally:
        host.remove(url)
        if view is not None:
            session.close()
