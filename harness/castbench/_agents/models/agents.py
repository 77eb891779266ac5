"""Model-backed policy, critic and simulated user: what `--policy openai/...` and friends create.

Each is created once per trial (see `castbench._agents.protocols`) with the role's validated
settings. They raise nothing but `InfrastructureError` (a provider failed after retries) and
`ProviderRejection` (the provider refused the conversation: the agent's failure); anything else
the model itself gets wrong is returned as data. Each reports the calls that got no answer as
`failed_usage` (the trial's record adds it to the role's usage: time spent on a call that failed
or timed out is still time the trial spent).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from castbench._agents.models.client import Completion, ModelClient, TrialKey
from castbench._agents.models.parse import (
    action_from_text,
    action_from_tool_calls,
    split_thinking,
    verdict_from_text,
)
from castbench._agents.models.prompts import (
    CRITIC_SCHEMA,
    action_schema,
    critic_messages,
    critic_system_prompt,
    response_format,
    user_system_prompt,
)
from castbench._agents.models.render import policy_messages
from castbench._agents.models.settings import ModelSettings
from castbench._agents.protocols import UserReply
from castbench._agents.views import Briefing, CriticView, PolicyView, UserBriefing
from castbench._base.conversation import Action, MalformedAction, Usage, Verdict
from castbench._domain.task import ToolCall

__all__ = ["LLMCritic", "LLMPolicy", "LLMUser", "for_role"]

_USER_TOOL_ROUNDS = 4
"""Device steps a simulated user may take before it must answer in words."""


def _tool_names(tools: tuple[dict[str, Any], ...]) -> list[str]:
    return [tool.get("function", tool)["name"] for tool in tools]


class LLMPolicy:
    def __init__(self, briefing: Briefing, model: str, **settings: Any) -> None:
        self.settings = ModelSettings(model=model, **settings)
        self.briefing = briefing
        self.client = ModelClient(self.settings, "policy", TrialKey(briefing.seed, briefing.trial_index))
        prompted = self.settings.style == "prompted"
        self._tools = None if prompted else list(briefing.tools)
        schema = action_schema(_tool_names(briefing.tools))
        self._format = response_format(self.settings.response_format, "action", schema) if prompted else None

    def propose(self, view: PolicyView) -> Action:
        style = self.settings.style
        messages = policy_messages(self.briefing, view.conversation, style)
        completion = self.client.complete(messages, self._tools, self._format)
        if style == "prompted":
            action = action_from_text(completion.text)
        else:
            action = action_from_tool_calls(completion.text, completion.tool_calls)
        if isinstance(action, MalformedAction) and completion.finish_reason == "length":
            action = action.model_copy(update={"reason": f"{action.reason} (cut off at max_tokens)"})
        return action.model_copy(update={"usage": completion.usage})

    @property
    def failed_usage(self) -> Usage:
        return self.client.failed


class LLMCritic:
    """Sees only the `CriticView`: the policy document, tools, visible conversation, proposal."""

    def __init__(self, briefing: Briefing, model: str, **settings: Any) -> None:
        self.settings = ModelSettings(model=model, **settings)
        self.client = ModelClient(self.settings, "critic", TrialKey(briefing.seed, briefing.trial_index))
        self._system = critic_system_prompt(briefing)
        self._format = response_format(self.settings.response_format, "verdict", CRITIC_SCHEMA)

    def verify(self, view: CriticView) -> Verdict:
        messages = critic_messages(self._system, view.conversation, view.proposal)
        completion = self.client.complete(messages, None, self._format)
        verdict = verdict_from_text(completion.text, cut=completion.finish_reason == "length")
        return verdict.model_copy(update={"usage": completion.usage})

    @property
    def failed_usage(self) -> Usage:
        return self.client.failed


class LLMUser:
    """Plays the scenario's customer. Its instructions stay in its own system prompt: the agent
    only ever sees the messages it writes. It opens with the scenario's request verbatim."""

    def __init__(self, briefing: UserBriefing, model: str, **settings: Any) -> None:
        self.settings = ModelSettings(model=model, **settings)
        self.briefing = briefing
        self.client = ModelClient(self.settings, "user", TrialKey(briefing.seed, 0))
        self._usage = Usage()
        self._messages: list[dict[str, Any]] = [
            {"role": "system", "content": user_system_prompt(briefing, self.settings.stop_token)}
        ]
        can_act = bool(briefing.user_tools) and briefing.perform is not None
        self._tools = list(briefing.user_tools) if can_act else None

    def open(self) -> str:
        opening = self.briefing.scenario.request
        self._messages.append({"role": "assistant", "content": opening})
        return opening

    def reply(self, message: str) -> UserReply:
        self._messages.append({"role": "user", "content": message})
        completion = self._complete()
        for _ in range(_USER_TOOL_ROUNDS):
            if not completion.tool_calls:
                break
            self._act(completion)
            completion = self._complete()
        text, _ = split_thinking(completion.text)  # the user's reasoning may quote its instructions
        self._messages.append({"role": "assistant", "content": text})
        token = self.settings.stop_token
        stop = token in text
        said = text.replace(token, "").strip()
        if (not said and not stop) or completion.finish_reason == "length" or completion.tool_calls:
            self._usage = self._usage + Usage(unusable=1)  # still passed on: the agent sees what it wrote
        return UserReply(said, stop=True) if stop else UserReply(said)

    @property
    def usage(self) -> Usage:
        """What the user's calls spent, failed ones included, and how many turns were unusable
        (empty, cut off at max_tokens, or still calling device tools after the last round)."""
        return self._usage + self.client.failed

    def _complete(self) -> Completion:
        completion = self.client.complete(self._messages, self._tools)
        self._usage = self._usage + completion.usage
        return completion

    def _act(self, completion: Completion) -> None:
        """Run the user's own-side tool calls (a phone setting, say) and show it the results."""
        assert self.briefing.perform is not None
        calls = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in completion.tool_calls
        ]
        self._messages.append({"role": "assistant", "content": completion.text, "tool_calls": calls})
        for call in completion.tool_calls:
            try:
                arguments = json.loads(call.arguments or "{}")
            except json.JSONDecodeError:
                arguments = None
            if not isinstance(arguments, dict):
                arguments = {}  # the tool then reports what is missing
            observation = self.briefing.perform(ToolCall(name=call.name, arguments=arguments, actor="user"))
            self._messages.append({"role": "tool", "tool_call_id": call.id, "content": observation.content})


def for_role(role: str) -> Callable[..., Any]:
    """What `castbench._agents.models.resolve.model_factory` calls:
    `factory(briefing, model=..., **settings)`."""
    return {"policy": LLMPolicy, "critic": LLMCritic, "user": LLMUser}[role]
