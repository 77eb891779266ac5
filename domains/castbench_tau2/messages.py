"""A castbench trial as τ²'s messages (and back): what τ²'s evaluator grades and what its
`Results` files hold.

A tool call the policy made becomes an `AssistantMessage` with one `ToolCall` followed by its
`ToolMessage` (τ²'s requestor `assistant`; a call the user made on their own side, telecom's
dual control, a `UserMessage` with that `ToolCall` and its `ToolMessage`, requestor `user`,
before what the user said), a reply an `AssistantMessage`
with text, what the user said a `UserMessage`. A call whose arguments were not a JSON object is
left out: it reached no tool (castbench answered it with an error) and τ²'s `ToolCall` cannot
hold it. castbench's trial ends map to τ²'s termination reasons: the user leaving, or a transfer
(which τ²'s user simulator answers by leaving), is `user_stop`; running out of steps
`max_steps`; reaching the tool-error limit `too_many_errors`; a failing or overrunning agent
`agent_error`. τ² grades only `user_stop` and `agent_stop` endings; castbench fails the others
too (`finished=False`).
"""

from __future__ import annotations

from typing import Any

from castbench.agents import MalformedAction, ReplyAction, ToolCallAction, ToolResultTurn, UserTurn
from castbench.domain import TrialRecord
from castbench_tau2.source import import_tau2

__all__ = ["TERMINATION", "trial_messages"]

TERMINATION = {
    "user_stop": "user_stop",
    "transfer": "user_stop",
    "max_steps": "max_steps",
    "too_many_errors": "too_many_errors",
    "agent_error": "agent_error",
    "timeout": "agent_error",
}
"""castbench's end reason -> τ²'s `TerminationReason` (errors of the harness are not scored)."""


def trial_messages(record: TrialRecord) -> list[Any]:
    message = import_tau2("tau2.data_model.message")
    messages: list[Any] = [message.UserMessage(role="user", content=record.opening)]
    for step in record.steps:
        action, observation = step.action, step.observation
        if isinstance(action, ToolCallAction) and isinstance(observation, ToolResultTurn):
            if not isinstance(action.arguments, dict):
                continue
            call = message.ToolCall(
                id=observation.call_id, name=action.name, arguments=action.arguments, requestor="assistant"
            )
            messages.append(message.AssistantMessage(role="assistant", content=None, tool_calls=[call]))
            messages.append(
                message.ToolMessage(
                    id=observation.call_id,
                    role="tool",
                    content=observation.content,
                    requestor="assistant",
                    error=observation.error,
                )
            )
        elif isinstance(action, ReplyAction):
            messages.append(message.AssistantMessage(role="assistant", content=action.text))
        elif isinstance(action, MalformedAction):
            messages.append(message.AssistantMessage(role="assistant", content=action.raw))
        if isinstance(observation, UserTurn):
            for position, done in enumerate(observation.tool_calls):  # dual control: the user's own tools
                call_id = f"call_{step.index}_user_{position}"
                arguments = dict(done.arguments)
                call = message.ToolCall(id=call_id, name=done.name, arguments=arguments, requestor="user")
                messages.append(message.UserMessage(role="user", content=None, tool_calls=[call]))
                messages.append(
                    message.ToolMessage(
                        id=call_id, role="tool", content=done.content, requestor="user", error=done.error
                    )
                )
            messages.append(message.UserMessage(role="user", content=observation.text))
    return messages
