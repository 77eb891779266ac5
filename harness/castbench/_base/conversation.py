"""What agents say and see: actions, and the events of a visible conversation.

These are the typed, stored shapes of a trajectory. Everything a policy or a deployed critic
receives is built from them in `castbench._agents.views`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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
]


AGENT_STOP = "###STOP###"
"""The stop marker: an agent that can only send text ends the conversation by including it in its
closing message (τ²'s agents use the same marker); the user does not hear it."""


class _Frozen(BaseModel):
    # NaN and the infinities in an agent's output stay what they were (not null) on the wire
    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")


class Usage(_Frozen):
    """Tokens, cost and time one model call (or one role over a trial) spent."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    latency_s: float = 0.0
    calls: int = 0
    retries: int = 0
    """Provider errors retried within these calls (rate limits, timeouts, 5xx)."""
    failed_calls: int = 0
    """Calls among `calls` that got no answer (failed after retries, timed out, refused): their
    time is in `latency_s`, their tokens are unknown."""
    unusable: int = 0
    """Answers among these calls that could not be used as written (a simulated user's empty or
    cut-off turn; malformed actions and unreadable verdicts are counted from the trajectory)."""

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost=cost,
            latency_s=self.latency_s + other.latency_s,
            calls=self.calls + other.calls,
            retries=self.retries + other.retries,
            failed_calls=self.failed_calls + other.failed_calls,
            unusable=self.unusable + other.unusable,
        )


class ToolCallAction(_Frozen):
    kind: Literal["tool_call"] = "tool_call"
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    """Parsed JSON arguments, or the raw text when the model's arguments were not JSON."""
    text: str = ""
    """Text the model sent along with the call (kept, not shown to the user)."""
    usage: Usage | None = None
    thinking: str = Field("", exclude_if=lambda value: not value)
    """What a reasoning model wrote in its `<think>` blocks with this call: on the record only
    (the transcripts, the critic and the policy's next prompt never show it). Left out when none."""


class ReplyAction(_Frozen):
    kind: Literal["reply"] = "reply"
    text: str
    """The answer, without any `<think>` block: what the user hears and the grader reads."""
    usage: Usage | None = None
    thinking: str = Field("", exclude_if=lambda value: not value)
    """What a reasoning model wrote in its `<think>` blocks before this reply: on the record only,
    never said to the user. Left out when none."""
    confidence: float | None = Field(None, ge=0.0, le=1.0, exclude_if=lambda value: value is None)
    """Optional: the agent's probability that the trial will succeed, as it stands when it says
    this. The last one reported in a trial is the trial's confidence: what predictability (Brier
    score, calibration error; `castbench profile`) is computed from. Left out when not given."""
    end: bool = Field(False, exclude_if=lambda value: not value)
    """The agent ends the conversation with this message (its closing words): the user answers
    it, and the trial ends as `agent_stop`, graded like any other ending. A reply whose text
    carries the stop marker (`AGENT_STOP`, for agents that speak only text) ends it too. Left
    out of stored JSON when false."""

    @property
    def ends(self) -> bool:
        """Whether this reply ends the conversation: `end`, or the stop marker in its text."""
        return self.end or AGENT_STOP in self.text

    @property
    def said(self) -> str:
        """The words the user hears: the text without the stop marker (a protocol signal)."""
        return self.text.replace(AGENT_STOP, "").strip() if AGENT_STOP in self.text else self.text


class MalformedAction(_Frozen):
    """Output that is neither a usable tool call nor a reply: the agent's failure, kept as data."""

    kind: Literal["malformed"] = "malformed"
    raw: str
    reason: str
    usage: Usage | None = None


Action = Annotated[ToolCallAction | ReplyAction | MalformedAction, Field(discriminator="kind")]


def canonical_action(action: ToolCallAction | ReplyAction | MalformedAction) -> str:
    """Same tool with the same arguments (key order ignored) -> same string. Used for resistance."""
    if isinstance(action, ToolCallAction):
        arguments = action.arguments
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:  # not JSON, or an integer of thousands of digits
                return f"{action.name}({arguments.strip()})"
        return f"{action.name}({json.dumps(arguments, sort_keys=True, separators=(',', ':'))})"
    if isinstance(action, ReplyAction):
        return "reply:" + " ".join(action.text.lower().split())
    return "malformed:" + action.raw


class Verdict(_Frozen):
    """A critic's judgement of one proposed action, before it executes."""

    verdict: Literal["valid", "invalid"]
    failure_type: Literal["hallucination", "domain_violation", "wrong_tool", "none"] = "none"
    explanation: str = ""
    suggested_fix: str | None = None
    parse_error: str | None = None
    """Set when a model critic's output could not be parsed (the verdict then defaults to valid)."""
    usage: Usage | None = None

    @property
    def flags(self) -> bool:
        return self.verdict == "invalid"


class UserToolCall(_Frozen):
    """A tool the simulated user ran on their own side (their phone, say) while replying, with
    what it answered: part of the trajectory a grader replays (τ²'s dual control)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    content: str
    error: bool = False


class UserTurn(_Frozen):
    role: Literal["user"] = "user"
    text: str
    tool_calls: tuple[UserToolCall, ...] = Field((), exclude_if=lambda calls: not calls)
    """The user-side tools run before saying `text`, in order (left out of stored JSON when none)."""


class AgentTurn(_Frozen):
    role: Literal["agent"] = "agent"
    action: Action
    call_id: str | None = None


class ToolResultTurn(_Frozen):
    role: Literal["tool"] = "tool"
    call_id: str
    name: str
    content: str
    error: bool = False


class CritiqueTurn(_Frozen):
    """A critic's rejection addressed to the policy, shown while it revises."""

    role: Literal["critic"] = "critic"
    verdict: Verdict
    proposal: Action


Event = Annotated[UserTurn | AgentTurn | ToolResultTurn | CritiqueTurn, Field(discriminator="role")]
