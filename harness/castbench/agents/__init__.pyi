"""The types of `castbench.agents`'s public names, which the module reads from their own modules on first
use (its docstring says why): imported as `__init__.py` lists them. Keep the two
together (tests/core/test_public_api.py)."""

from castbench.agents.critics.checks import (
    call_findings,
)
from castbench.agents.protocols import (
    Critic,
    Policy,
    UserReply,
    UserSimulator,
)
from castbench.agents.registry import (
    BuiltinAgent,
    resolve,
)
from castbench.agents.spec import (
    AgentSpec,
    AgentSpecError,
)
from castbench.agents.views import (
    Briefing,
    CriticView,
    PolicyView,
    UserBriefing,
    public_briefing,
)
from castbench.conversation import (
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
from castbench.errors import (
    ServerDown,
)
from castbench.models.agents import (
    LLMUser,
)
from castbench.models.client import (
    Completion,
    ModelClient,
    TrialKey,
)
from castbench.models.parse import (
    find_json_object,
    verdict_from_text,
)
from castbench.models.prompts import (
    critic_messages,
    critic_system_prompt,
)
from castbench.models.render import (
    action_json,
    describe_action,
    policy_messages,
    tool_manual,
    transcript,
)
from castbench.models.settings import (
    ModelSettings,
    configure_model_agent,
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
