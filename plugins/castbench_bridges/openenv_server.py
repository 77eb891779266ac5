"""castbench's domains as an OpenEnv environment, so trainers that speak OpenEnv (`openenv-core`:
WebSocket sessions, `reset` / `step` / `state`) train on the same episodes `eval` grades.

    uvicorn castbench_bridges.openenv_server:app --port 8000      # or: app = create_app(critic="rules")

A session's `reset(domain=..., task=..., trial=..., seed=...)` starts that trial (`seed`: the run
seed, as `eval --seed`); `step({"kind": "tool_call", "name": ..., "arguments": {...}})` or
`step({"kind": "reply", "text": ...})` steps it. Observations carry the public briefing (policy
document, tool schemas) and the visible conversation; the final one the grader's reward. Each
WebSocket session has its own `Environment`, hence its own sandbox.
"""

from __future__ import annotations

from typing import Any, Literal

from openenv.core.env_server import Action, Observation, create_fastapi_app
from openenv.core.env_server import Environment as OpenEnvEnvironment
from openenv.core.env_server.types import State
from pydantic import Field

from castbench._agents.transports.wire import EVENTS
from castbench._agents.views import PolicyView
from castbench._base.conversation import CritiqueTurn, ReplyAction, ToolCallAction
from castbench._run.environment import Environment

__all__ = ["CastbenchAction", "CastbenchObservation", "CastbenchOpenEnv", "app", "create_app"]


class CastbenchAction(Action):
    kind: Literal["tool_call", "reply"]
    name: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    text: str = ""


class CastbenchObservation(Observation):
    conversation: list[dict[str, Any]] = Field(default_factory=list)
    """The visible conversation (castbench's event shapes, as JSON); during a revision it ends
    with the critique."""
    policy: str = ""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    write_tools: list[str] = Field(default_factory=list)
    seed: int = 0
    trial_index: int = 0
    critique: str | None = None
    """The critic's explanation when it rejected the last action (nothing was executed)."""
    end_reason: str | None = None
    """Once done: why the trial ended (`user_stop`, `transfer`, `max_steps`, ...)."""


class CastbenchOpenEnv(OpenEnvEnvironment[CastbenchAction, CastbenchObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, user: str = "scripted", critic: str | None = None) -> None:
        super().__init__()
        self.env = Environment(user=user, critic=critic or "none")
        self._state = State()

    def _observation(self, view: PolicyView | None, **fields: Any) -> CastbenchObservation:
        if view is None:
            return CastbenchObservation(**fields)
        return CastbenchObservation(
            conversation=EVENTS.dump_python(list(view.conversation), mode="json"),
            policy=view.briefing.policy,
            tools=list(view.briefing.tools),
            write_tools=sorted(view.briefing.write_tools),
            seed=view.briefing.seed,
            trial_index=view.briefing.trial_index,
            **fields,
        )

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        domain: str = "retail",
        task: str | None = None,
        trial: int = 0,
        **kwargs: Any,
    ) -> CastbenchObservation:
        if task is None:
            raise ValueError("reset needs a task id (task=...)")
        view = self.env.reset(domain, task, trial, seed or 0)
        self._state = State(episode_id=episode_id or f"{domain}/{task}#{trial}", step_count=0)
        return self._observation(view, done=view is None)

    def step(
        self, action: CastbenchAction, timeout_s: float | None = None, **kwargs: Any
    ) -> CastbenchObservation:
        if action.kind == "reply":
            stepped: Any = ReplyAction(text=action.text)
        else:
            stepped = ToolCallAction(name=action.name, arguments=action.arguments)
        result = self.env.step(stepped)
        self._state.step_count += 1
        critique = (
            result.observation.verdict.explanation if isinstance(result.observation, CritiqueTurn) else None
        )
        end_reason = result.record.end_reason if result.record is not None else None
        return self._observation(
            result.view, done=result.done, reward=result.reward, critique=critique, end_reason=end_reason
        )

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        if self.env.episode is not None:
            self.env.episode.close()


def create_app(user: str = "scripted", critic: str | None = None, max_sessions: int = 64) -> Any:
    """The OpenEnv FastAPI app: one `CastbenchOpenEnv` per WebSocket session."""
    return create_fastapi_app(
        lambda: CastbenchOpenEnv(user, critic),
        CastbenchAction,
        CastbenchObservation,
        max_concurrent_envs=max_sessions,
    )


app = create_app()
