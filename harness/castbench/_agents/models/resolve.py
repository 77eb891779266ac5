"""One agent resolution for every way in: `castbench eval`, `castbench._run.api`, `castbench mcp serve`
and the step-wise `Environment` accept the same agent strings and build the same agents.

An agent string names a built-in (`scripted`, `oracle?...`), an import path, an agent service
(`http://...`) or a model (`provider/model?...`). The registry (`castbench._agents.registry`)
parses all of them; a model string's agent comes from `castbench._agents.models.agents`, imported only
when one is used (litellm is slow to import and not needed offline)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from castbench._agents.registry import AgentSpec, Role, resolve

__all__ = ["ModelOptions", "model_factory", "resolve_agent"]


@cache
def model_factory(role: Role) -> Callable[..., Any]:
    """The model-backed agent for a role, as the registry calls it: `factory(briefing, **params)`
    (one per role, so that two resolutions of one string give equal specs)."""

    def create(briefing: Any, **params: Any) -> Any:
        from castbench._agents.models import agents

        return agents.for_role(role)(briefing, **params)

    return create


@dataclass(frozen=True)
class ModelOptions:
    """Run-wide settings for model agents: `--models-config` tables, `--api-base`, `--cache` and
    `--concurrency` (see `castbench._agents.models.settings`)."""

    layers: dict[str, dict[str, Any]] | None = None
    api_base: str | None = None
    cache_dir: str | None = None
    concurrency: int | None = None


def resolve_agent(
    role: Role, spec: str, *, in_process: bool = False, options: ModelOptions | None = None
) -> tuple[AgentSpec, dict[str, Any] | None]:
    """The agent `spec` names for `role`, and for a model agent the settings a run records (its
    settings merged with `options` and checked, so a bad one fails here, wherever it came in).
    An import path runs in a worker process unless `in_process` (or the agent declares itself
    privileged)."""
    agent = resolve(role, spec, model_factory(role), in_process=in_process)
    if agent.kind != "model":
        return agent, None
    from castbench._agents.models.settings import configure_model_agent  # model runs' only (litellm)

    chosen = options or ModelOptions()
    return configure_model_agent(agent, chosen.layers, chosen.api_base, chosen.cache_dir, chosen.concurrency)
