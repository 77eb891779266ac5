"""castbench's public API for agent authors: the actions an agent returns, the turns and events it
reads, the views it is handed, the Protocols it implements (a policy, a critic, a simulated user),
the registry a pack adds agents to, and the building blocks of a model-backed agent.

An agent imports from here only (docs/api.md): every other module of castbench is internal and may
change without notice. Each name is written once, as the import statement that gives it, and loads
on first use (`castbench._public`), so that `import castbench.agents` (which every agent worker
does) loads none of castbench's internals.
"""

# ruff: noqa: F401, I001  (each import is a public name, grouped by what it is for: no unused name, no reorder)

from __future__ import annotations

from typing import TYPE_CHECKING

from castbench import _public

if TYPE_CHECKING:
    # what an agent returns and reads: actions, turns, events, a critic's verdict
    from castbench._base.conversation import (
        AGENT_STOP,
        Action,
        AgentTurn,
        CritiqueTurn,
        Event,
        MalformedAction,
        ReplyAction,
        ToolCallAction,
        ToolResultTurn,
        Usage,
        UserToolCall,
        UserTurn,
        Verdict,
        canonical_action,
    )

    # what it is handed
    from castbench._agents.views import Briefing, CriticView, PolicyView, UserBriefing, public_briefing

    # what it implements
    from castbench._agents.protocols import Critic, Policy, UserReply, UserSimulator

    # how a pack ships an agent and how an agent spec (`--policy NAME`) is resolved
    from castbench._agents.spec import AgentSpec, AgentSpecError
    from castbench._agents.registry import BuiltinAgent, resolve

    # a critic's rule checks, as the built-in critics run them
    from castbench._agents.critics.checks import call_findings

    # what an agent raises when its model server is gone (the run stops instead of failing trials)
    from castbench._base.errors import ServerDown

    # a model-backed agent: the client, its settings, the prompts and their parsing, a served model
    from castbench._agents.models.agents import LLMUser
    from castbench._agents.models.client import Completion, ModelClient, TrialKey
    from castbench._agents.models.settings import ModelSettings, configure_model_agent
    from castbench._agents.models.prompts import critic_messages, critic_system_prompt
    from castbench._agents.models.render import (
        action_json,
        describe_action,
        policy_messages,
        tool_manual,
        transcript,
    )
    from castbench._agents.models.parse import find_json_object, verdict_from_text

# vLLM serving moved to the CAST plugin: each name still resolves here, with a
# `CastbenchDeprecationWarning` naming its new place, until castbench 0.2.0 (the one place this
# module names a plugin)
_MOVED = dict.fromkeys(
    ("ServeError", "ServeOptions", "vllm_command", "wait_until_ready"), "castbench_cast.vllm"
)

__all__, __getattr__, __dir__ = _public.names(globals(), moved=_MOVED)
