"""Turning `--policy` / `--critic` / `--user` strings into factories.

A spec is one of:
- a built-in name with optional parameters: `oracle`, `scripted:noisy?p=0.15&recover=0.5`;
- an import path to a team's own class or factory: `mypkg.agents:MyPolicy?temperature=0.2`;
- a litellm model string (anything with a `/`): `openai/gpt-4o-mini`, `hosted_vllm/Qwen/Qwen3-8B`;
- an agent service (policy only): `http://HOST:PORT/PATH` speaks castbench's agent protocol
  (`castbench_bridges.agent_http`), and `http://HOST:PORT/v1/chat/completions?model=NAME` the
  OpenAI chat-completions shape with tools (castbench executes its tool calls).
- an A2A agent (policy only): `a2a+http://HOST:PORT` (its card at `/.well-known/agent-card.json`),
  castbench playing the customer over A2A and serving the tools over MCP
  (`castbench_bridges.a2a_policy`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any
from urllib.parse import parse_qsl

from pydantic import ValidationError

from castbench._agents.spec import (
    AgentSpec,
    AgentSpecError,
    BuiltinAgent,
    Role,
    import_target,
    protocol_problem,
)
from castbench._base.deprecation import forward

__all__ = [
    "AgentSpec",
    "AgentSpecError",
    "BuiltinAgent",
    "Role",
    "builtin_agents",
    "import_target",
    "is_builtin",
    "protocol_problem",
    "register",
    "resolve",
]


_BUILTINS: dict[Role, dict[str, BuiltinAgent]] = {"policy": {}, "critic": {}, "user": {}}


def register(agent: BuiltinAgent) -> None:
    _BUILTINS[agent.role][agent.name] = agent


def builtin_agents(role: Role) -> list[BuiltinAgent]:
    _load_builtins()
    _load_pack_agents()
    return sorted(_BUILTINS[role].values(), key=lambda agent: agent.name)


def is_builtin(role: Role, name: str) -> bool:
    """Whether `name` (no parameters) is one of castbench's own agents for `role`."""
    _load_builtins()
    return name in _BUILTINS[role]


def _load_builtins() -> None:
    """castbench's own agents, registered by this call on first need (their modules load then:
    an agent worker, which never resolves a name, loads none of them)."""
    if not _BUILTINS["policy"]:
        from castbench._agents.builtin import shipped_agents

        for agent in shipped_agents():
            register(agent)


_PACKS_LOADED: list[bool] = []


def _load_pack_agents() -> None:
    """The agents packs add (entry points `castbench.agents`: τ's and τ²'s LLM users), loaded only
    when a name is not castbench's own or when every agent is listed, since a pack's agent module
    may import a model client (seconds) that an offline run never needs."""
    if _PACKS_LOADED:
        return
    _PACKS_LOADED.append(True)
    for point in entry_points(group="castbench.agents"):
        register(point.load())


def _split(spec: str) -> tuple[str, dict[str, str]]:
    name, _, query = spec.partition("?")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError as exc:
        raise AgentSpecError(f"cannot parse parameters '{query}' in '{spec}': {exc}") from exc
    params = dict(pairs)
    if len(params) < len(pairs):  # `?t=0.1&t=0.9`: which one was meant is not ours to guess
        twice = sorted({key for key, _ in pairs if sum(other == key for other, _ in pairs) > 1})
        raise AgentSpecError(f"parameter {', '.join(twice)} is given more than once in '{spec}'")
    return name.strip(), params


def _coerce(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def spec_parameters(spec: str) -> tuple[str, dict[str, Any]]:
    """`name?key=value&...` as its name and typed parameters (JSON values where they read as
    JSON, strings otherwise), as every agent spec is read; `AgentSpecError` when the query does
    not parse."""
    name, raw = _split(spec)
    return name, {key: _coerce(value) for key, value in raw.items()}


def _typed(role: Role, agent: BuiltinAgent, spec: str, raw: dict[str, str]) -> dict[str, Any]:
    if agent.params is None:
        if raw:
            raise AgentSpecError(f"{role} '{agent.name}' takes no parameters (got {', '.join(raw)})")
        return {}
    try:
        model = agent.params.model_validate({key: _coerce(value) for key, value in raw.items()})
    except ValidationError as exc:
        problems = "; ".join(
            f"'{'.'.join(str(p) for p in err['loc'])}': {err['msg']}" for err in exc.errors()
        )
        known = ", ".join(agent.params.model_fields)
        raise AgentSpecError(f"{role} '{spec}': {problems} (parameters: {known})") from exc
    unknown = set(raw) - set(agent.params.model_fields)
    if unknown:
        known = ", ".join(agent.params.model_fields)
        raise AgentSpecError(f"{role} '{spec}': unknown parameter {sorted(unknown)} (parameters: {known})")
    return {key: getattr(model, key) for key in raw}


_CHAT_COMPLETIONS = "/chat/completions"


def _service(
    role: Role, spec: str, url: str, raw: dict[str, str], model_factory: Callable[..., Any] | None
) -> AgentSpec:
    """An agent behind an endpoint. A chat-completions URL is an OpenAI-compatible model at that
    server (its `model` parameter names the model there, `agent` by default); any other URL
    speaks castbench's agent protocol, tools over MCP."""
    if role != "policy":
        raise AgentSpecError(f"{role} '{spec}': only a policy can be an agent service")
    if url.rstrip("/").endswith(_CHAT_COMPLETIONS):
        if model_factory is None:
            raise AgentSpecError(f"{role} '{spec}': no model backend is available for the {role} role")
        params: dict[str, Any] = {key: _coerce(value) for key, value in raw.items()}
        params["model"] = "openai/" + str(raw.get("model", "agent"))
        params["api_base"] = url.rstrip("/")[: -len(_CHAT_COMPLETIONS)]
        return AgentSpec(role, spec, url, model_factory, params, False, "model")
    if raw:
        raise AgentSpecError(
            f"{role} '{spec}': an agent service URL takes no parameters (got {', '.join(raw)})"
        )
    missing = [name for name in _SERVICE_MODULES if _absent(name)]
    if missing:  # said before any trial, not as each trial's failure
        raise AgentSpecError(
            f"{role} '{spec}': an agent service needs the 'service' extra (missing: {', '.join(missing)}); "
            "install it with: pip install 'castbench[service]'"
        )
    return AgentSpec(role, spec, url, None, {}, False, "service", "service")


_SERVICE_MODULES = ("mcp", "httpx", "uvicorn")
"""What driving an agent service imports (`castbench_bridges`): the `service` extra's."""


def _absent(module: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(module) is None
    except (ImportError, ValueError):
        return True


def _check_syntax(role: Role, spec: str, name: str) -> None:
    """An agent whose code Python cannot parse: one line naming the file and line (read from its
    source, without running it), not a worker's traceback and "exited (code -9)"."""
    from castbench._agents.code import agent_code

    problems = agent_code(name.partition(":")[0], role).syntax_errors
    if problems:
        raise AgentSpecError(f"{role} '{spec}': syntax error in {problems[0]}")


def _by_transport(scheme: str, role: Role, spec: str, url: str) -> AgentSpec:
    """An agent reached through another protocol (`a2a+http://...`): the protocol's code registers
    how to reach one under the entry-point group `castbench.transports` (A2A's: the `bridges`
    extra, `castbench_bridges.a2a_policy`), so the registry imports no transport."""
    found = entry_points(group="castbench.transports", name=scheme)
    if not found:
        raise AgentSpecError(
            f"{role} '{spec}': no '{scheme}+' transport is registered (castbench.transports)"
        )
    try:
        by_url: Callable[[Role, str, str], AgentSpec] = next(iter(found)).load()
    except ImportError as exc:
        raise AgentSpecError(
            f"{role} '{spec}': the '{scheme}+' transport needs its extra: pip install -e '.[bridges]' ({exc})"
        ) from exc
    return by_url(role, spec, url)


def resolve(
    role: Role, spec: str, model_factory: Callable[..., Any] | None = None, *, in_process: bool = False
) -> AgentSpec:
    """The factory a spec names. `model_factory` builds the model-backed agent for this role.

    An import path is imported and checked in a worker process (its module's code never runs
    in castbench's process), unless `in_process` or the class declares itself privileged."""
    _load_builtins()
    name, raw = _split(spec)
    if role == "critic" and name in ("", "none"):
        return AgentSpec(role, spec, "none", None, kind="none")
    scheme, plus, url = name.partition("+")
    if plus and url.startswith(("http://", "https://")):
        if raw:
            got = ", ".join(raw)
            raise AgentSpecError(f"{role} '{spec}': an agent's URL takes no parameters (got {got})")
        return _by_transport(scheme, role, spec, url)
    if name.startswith(("http://", "https://")):
        return _service(role, spec, name, raw, model_factory)
    if name not in _BUILTINS[role] and "/" not in name and "." not in name:  # not a model or import path
        _load_pack_agents()
    builtin = _BUILTINS[role].get(name)
    if builtin is not None and builtin.model_backed:
        if "model" not in raw:
            raise AgentSpecError(f"{role} '{spec}' needs a model: {name}?model=provider/model")
        params = {key: _coerce(value) for key, value in raw.items()}
        params["model"] = raw["model"]
        return AgentSpec(role, spec, name, builtin.factory, params, False, "model")
    if builtin is not None:
        params = _typed(role, builtin, spec, raw)
        return AgentSpec(role, spec, name, builtin.factory, params, builtin.privileged)
    if ":" in name and "/" not in name:
        params = {key: _coerce(value) for key, value in raw.items()}
        _check_syntax(role, spec, name)
        if not in_process:
            from castbench._agents.transports.worker import probe

            found = probe(role, name)
            forward(found.deprecations)  # what its import warned of, in its worker: shown here
            if not found.privileged:
                return AgentSpec(role, spec, name, None, params, False, "import", "worker", found.needs)
        factory = import_target(name)
        problem = protocol_problem(role, name, factory)
        if problem is not None:
            raise AgentSpecError(problem)
        privileged = bool(getattr(factory, "privileged", False))
        return AgentSpec(role, spec, name, factory, params, privileged, "import")
    if "/" in name:
        if model_factory is None:
            raise AgentSpecError(f"{role} '{spec}': no model backend is available for the {role} role")
        params = {"model": name, **{key: _coerce(value) for key, value in raw.items()}}
        return AgentSpec(role, spec, name, model_factory, params, False, "model")
    known = ", ".join(sorted(_BUILTINS[role])) or "none"
    raise AgentSpecError(
        f"unknown {role} '{spec}': not a built-in ({known}), an import path (module:Class) "
        "or a model string (provider/model)"
    )
