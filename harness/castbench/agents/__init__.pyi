"""The types of `castbench.agents`'s public names, which the module reads from their own modules on first
use (its docstring says why): imported as `__init__.py` lists them. Keep the two
together (tests/core/test_public_api.py)."""

from castbench._agents.critics.checks import (
    call_findings,
)
from castbench._agents.models.agents import (
    LLMUser,
)
from castbench._agents.models.client import (
    Completion,
    ModelClient,
    TrialKey,
)
from castbench._agents.models.parse import (
    find_json_object,
    verdict_from_text,
)
from castbench._agents.models.prompts import (
    critic_messages,
    critic_system_prompt,
)
from castbench._agents.models.render import (
    action_json,
    describe_action,
    policy_messages,
    tool_manual,
    transcript,
)
from castbench._agents.models.settings import (
    ModelSettings,
    configure_model_agent,
)
from castbench._agents.protocols import (
    Critic,
    Policy,
    UserReply,
    UserSimulator,
)
from castbench._agents.registry import (
    BuiltinAgent,
    resolve,
)
from castbench._agents.spec import (
    AgentSpec,
    AgentSpecError,
)
from castbench._agents.views import (
    Briefing,
    CriticView,
    PolicyView,
    UserBriefing,
    public_briefing,
)
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
from castbench._base.errors import (
    ServerDown,
)

__all__ = [
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
    "Briefing",
    "CriticView",
    "PolicyView",
    "UserBriefing",
    "public_briefing",
    "Critic",
    "Policy",
    "UserReply",
    "UserSimulator",
    "AgentSpec",
    "AgentSpecError",
    "BuiltinAgent",
    "resolve",
    "call_findings",
    "ServerDown",
    "LLMUser",
    "Completion",
    "ModelClient",
    "TrialKey",
    "ModelSettings",
    "configure_model_agent",
    "critic_messages",
    "critic_system_prompt",
    "action_json",
    "describe_action",
    "policy_messages",
    "tool_manual",
    "transcript",
    "find_json_object",
    "verdict_from_text",
]
