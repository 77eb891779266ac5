"""castbench's public API for agent authors: the actions an agent returns, the turns and events it
reads, the views it is handed, the Protocols it implements (a policy, a critic, a simulated user),
the registry a pack adds agents to, and the building blocks of a model-backed agent.

An agent imports from here only (docs/api.md): every other module of castbench is internal and may
change without notice. Each name is read from the module that defines it on first use, so that
`import castbench.agents` (which every agent worker does) loads none of castbench's modules; the
submodules of this package (`castbench._agents.views`, `.registry`, `.sandbox`, ...) are internal.

The names come in by name (`importlib`) rather than by an import statement, because a facade is
not a dependency of the layer it sits in: several of its names live above `agents` in the layers
of pyproject's `[tool.importlinter]`, and an import statement would read as a cycle there. Their
types are in the stub beside this file (`__init__.pyi`); tests/core/test_public_api.py holds the
two to the same names and every name to its module.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

# the module each public name is defined in, grouped by that module
_HOMES: dict[str, tuple[str, ...]] = {
    # what an agent returns and reads: actions, turns, events, a critic's verdict
    "castbench._base.conversation": (
        "AGENT_STOP",
        "Action",
        "AgentTurn",
        "CritiqueTurn",
        "Event",
        "MalformedAction",
        "ReplyAction",
        "ToolCallAction",
        "ToolResultTurn",
        "Usage",
        "UserToolCall",
        "UserTurn",
        "Verdict",
        "canonical_action",
    ),
    # what it is handed
    "castbench._agents.views": ("Briefing", "CriticView", "PolicyView", "UserBriefing", "public_briefing"),
    # what it implements
    "castbench._agents.protocols": ("Critic", "Policy", "UserReply", "UserSimulator"),
    # how a pack ships an agent and how an agent spec (`--policy NAME`) is resolved
    "castbench._agents.spec": ("AgentSpec", "AgentSpecError"),
    "castbench._agents.registry": ("BuiltinAgent", "resolve"),
    # a critic's rule checks, as the built-in critics run them
    "castbench._agents.critics.checks": ("call_findings",),
    # what an agent raises when its model server is gone (the run stops instead of failing trials)
    "castbench._base.errors": ("ServerDown",),
    # a model-backed agent: the client, its settings, the prompts and their parsing, a served model
    "castbench._agents.models.agents": ("LLMUser",),
    "castbench._agents.models.client": ("Completion", "ModelClient", "TrialKey"),
    "castbench._agents.models.settings": ("ModelSettings", "configure_model_agent"),
    "castbench._agents.models.prompts": ("critic_messages", "critic_system_prompt"),
    "castbench._agents.models.render": (
        "action_json",
        "describe_action",
        "policy_messages",
        "tool_manual",
        "transcript",
    ),
    "castbench._agents.models.parse": ("find_json_object", "verdict_from_text"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

_MOVED = {
    name: "castbench_cast.vllm" for name in ("ServeError", "ServeOptions", "vllm_command", "wait_until_ready")
}
"""Names that moved out of castbench's core (vLLM serving: the CAST plugin's): each still resolves
here, with a `DeprecationWarning` naming its new place, until the removal release. Reading one
loads the plugin's module, the one place this module names a plugin (a deprecation, removed in
castbench 0.2.0: `castbench._base.deprecation.REMOVAL`)."""

__all__ = [name for names in _HOMES.values() for name in names]


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from castbench._base.deprecation import moved  # here: `import castbench.agents` loads nothing

        moved(f"castbench.agents.{name}", _MOVED[name], stacklevel=3)
        return getattr(_module(_MOVED[name]), name)
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # read at each look-up, never kept here: a test that patches the name where it is defined
    # (`monkeypatch.setattr(castbench._run.api, "evaluate", ...)`) is seen by every later reader
    return getattr(_module(home), name)


def _module(home: str) -> ModuleType:
    """The module `home` names, by a plain import statement: the import contract sees each edge
    (pyproject's `[tool.importlinter]`), and each module loads on first use only."""
    match home:
        case "castbench._base.conversation":
            import castbench._base.conversation  # noqa: F401
        case "castbench._agents.views":
            import castbench._agents.views  # noqa: F401
        case "castbench._agents.protocols":
            import castbench._agents.protocols  # noqa: F401
        case "castbench._agents.spec":
            import castbench._agents.spec  # noqa: F401
        case "castbench._agents.registry":
            import castbench._agents.registry  # noqa: F401
        case "castbench._agents.critics.checks":
            import castbench._agents.critics.checks  # noqa: F401
        case "castbench._base.errors":
            import castbench._base.errors  # noqa: F401
        case "castbench._agents.models.agents":
            import castbench._agents.models.agents  # noqa: F401
        case "castbench._agents.models.client":
            import castbench._agents.models.client  # noqa: F401
        case "castbench._agents.models.settings":
            import castbench._agents.models.settings  # noqa: F401
        case "castbench._agents.models.prompts":
            import castbench._agents.models.prompts  # noqa: F401
        case "castbench._agents.models.render":
            import castbench._agents.models.render  # noqa: F401
        case "castbench._agents.models.parse":
            import castbench._agents.models.parse  # noqa: F401
        case "castbench_cast.vllm":
            import castbench_cast.vllm  # noqa: F401
        case _:
            raise AssertionError(f"{home}: a home without its case here")
    return sys.modules[home]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
