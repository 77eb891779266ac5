"""What a resolved `--policy` / `--critic` / `--user` is (`AgentSpec`), and how an import-path
agent is loaded and checked (`import_target`, `protocol_problem`).

A module of its own, below both the registry and the transports: the registry
(`castbench._agents.registry`) resolves a spec and, for an import path, asks a worker process to
probe it (`castbench._agents.transports.worker`); the workers load the agent the same way and run
the `AgentSpec` they are given. `castbench._agents.registry` names all of these too, where they
were first defined.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from castbench._agents.needs import SandboxNeeds

__all__ = [
    "AgentSpec",
    "AgentSpecError",
    "BuiltinAgent",
    "Role",
    "built_problem",
    "import_target",
    "protocol_problem",
]

Role = Literal["policy", "critic", "user"]


class AgentSpecError(ValueError):
    """A `--policy`/`--critic`/`--user` value that cannot be used; says which and why."""


@dataclass(frozen=True)
class BuiltinAgent:
    """An agent castbench or a pack ships, by name (`--policy scripted:refuse`): registered with
    the registry (`castbench._agents.registry.register`; a pack's through the `castbench.agents`
    entry point group)."""

    role: Role
    name: str
    factory: Callable[..., Any]
    summary: str
    params: type[BaseModel] | None = None
    privileged: bool = False
    model_backed: bool = False
    """It calls a model (`name?model=provider/model&...`): its parameters are model settings,
    merged and checked like a model string's."""


@dataclass(frozen=True)
class AgentSpec:
    role: Role
    spec: str
    """The string as given: recorded in the run's config."""
    name: str
    factory: Callable[..., Any] | None
    """`None` only for `--critic none`."""
    params: dict[str, Any] = field(default_factory=dict)
    privileged: bool = False
    kind: Literal["builtin", "import", "model", "service", "none"] = "builtin"
    transport: Literal["in-process", "worker", "service", "a2a"] = "in-process"
    """Where the agent runs: import-path agents run in worker processes of their own unless
    they declare themselves privileged or `in_process` was asked for (see `agents.transports`)."""
    sandbox_needs: SandboxNeeds = field(default_factory=SandboxNeeds)
    """What a worker-run agent declares it needs beyond the strictest sandbox (`sandbox_env`,
    `sandbox_connect`, `sandbox_read`): its workers start with it; provenance shows it."""

    def create(self, briefing: Any) -> Any:
        if self.factory is None:
            raise AgentSpecError(f"{self.role} '{self.spec}' cannot be created")
        agent = self.factory(briefing, **self.params)
        if self.kind == "import" and not isinstance(self.factory, type):  # a factory function
            problem = built_problem(self.role, self.spec, agent)
            if problem is not None:
                raise AgentSpecError(problem)
        return agent


def import_target(path: str) -> Callable[..., Any]:
    """Import `module:attribute`, looking in the working directory too (as `python -m` does), so
    a team's agent module next to its config is found by the `castbench` console script."""
    module_name, _, attribute = path.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentSpecError(f"cannot import '{module_name}' for '{path}': {exc}") from exc
    except SyntaxError as exc:  # the agent's own code (or what it imports): where, not a crash
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else f"line {exc.lineno}"
        raise AgentSpecError(f"'{path}': syntax error in {where}: {exc.msg}") from exc
    except Exception as exc:  # its module raised while importing: its fault, said in one line
        raise AgentSpecError(f"'{path}': importing '{module_name}' raised {exc!r}") from exc
    try:
        return getattr(module, attribute)  # type: ignore[no-any-return]
    except AttributeError as exc:
        raise AgentSpecError(f"module '{module_name}' has no attribute '{attribute}'") from exc


def protocol_problem(role: Role, path: str, target: Any) -> str | None:
    """Why the class `path` names cannot play `role` (a method of the role's protocol is missing),
    or None. Factories that are not classes are only known once called."""
    from castbench._agents.protocols import PROTOCOL_METHODS

    if not isinstance(target, type):
        return _not_a_factory(role, path, target, PROTOCOL_METHODS[role])
    missing = [method for method in PROTOCOL_METHODS[role] if not callable(getattr(target, method, None))]
    if not missing:
        return None
    methods = " and ".join(f"'{method}'" for method in missing)
    return (
        f"{role} '{path}': class {target.__name__} does not implement the {role} protocol: "
        f"no method {methods} (see castbench/_agents/protocols.py)"
    )


def _not_a_factory(role: Role, path: str, target: Any, methods: tuple[str, ...]) -> str | None:
    """Why `target`, not a class, cannot build the agents of a run (each trial builds its own, as
    `target(briefing, **params)`), or None for a function that may."""
    kind = type(target).__name__
    if all(callable(getattr(target, method, None)) for method in methods):
        return (
            f"{role} '{path}': is an agent object ({kind}), not a class: each trial builds a fresh "
            f"agent, so name its class (module:{kind}) or a function that returns one"
        )
    if not callable(target):
        return (
            f"{role} '{path}': is a {kind} value, not a class implementing the {role} protocol "
            "nor a function that builds one"
        )
    try:
        inspect.signature(target).bind(None)
    except TypeError:
        return (
            f"{role} '{path}': the function cannot build an agent: it is called with the trial's "
            "briefing, as f(briefing, **params), and must return an object with the method(s) "
            + ", ".join(f"'{method}'" for method in methods)
        )
    except ValueError:  # a builtin without a signature: known once called
        return None
    return None


def built_problem(role: Role, path: str, agent: Any) -> str | None:
    """Why what a factory function returned cannot play `role`, or None."""
    from castbench._agents.protocols import PROTOCOL_METHODS

    missing = [method for method in PROTOCOL_METHODS[role] if not callable(getattr(agent, method, None))]
    if not missing:
        return None
    return (
        f"{role} '{path}': returned a {type(agent).__name__}, which does not implement the {role} "
        f"protocol: no method {' and '.join(repr(method) for method in missing)}"
    )
