"""One trial's sandbox as MCP tools: the domain's tools with their schemas, each call stepped
through the trial's `Episode` (the critic verifies it before it runs; a rejection comes back as
the tool's result, with the critique, and the agent's next call is its revision).

`respond_to_user` is offered when the MCP client is the whole agent (`castbench mcp serve`): it
sends the agent's message to the simulated user and returns the answer; with `end_conversation`
(or the stop marker in the message) it is the agent's closing message, and the trial ends as
`agent_stop` once the user has answered. When castbench drives
the conversation itself (an agent service), the user's messages travel over HTTP instead.

A call that can wait on no agent (no critic on the trial, or castbench's scripted one; not
`respond_to_user`, unless the user is the scripted one: `Episode.never_blocks`) runs on the
server's event loop, which saves the thread hop (about a third of the server's cost per call).
Any other call may wait on a model, so it runs on a worker thread and never holds up other
trials' calls; so does a call arriving while the trial is busy with another step.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import mcp_types as types

from castbench._base.conversation import CritiqueTurn, ReplyAction, ToolCallAction, UserTurn, Verdict
from castbench._trial.episode import Episode, StepOutcome

__all__ = ["RESPOND_TOOL", "McpTrial", "critique_text", "verdict_json"]

RESPOND_TOOL = "respond_to_user"


def critique_text(verdict: Verdict) -> str:
    """What an outside agent reads when the critic rejected its proposal."""
    text = f"Not executed: a verifier rejected this action ({verdict.failure_type}). {verdict.explanation}"
    if verdict.suggested_fix:
        text += f" Suggested fix: {verdict.suggested_fix}"
    return text.strip() + " Revise it and try again."


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    """The critic's verdict as an outside agent gets it, beside the critique's text."""
    return verdict.model_dump(mode="json", exclude={"usage"})


def _tool(schema: dict[str, Any]) -> types.Tool:
    function = schema["function"]
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    return types.Tool(name=function["name"], description=function.get("description"), input_schema=parameters)


def _text(text: str, error: bool, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)], is_error=error, structured_content=structured
    )


class McpTrial:
    """The MCP face of one episode (the episode is reset by whoever drives the conversation)."""

    def __init__(self, episode: Episode, respond_tool: bool = False) -> None:
        self.episode = episode
        self.respond_tool = respond_tool
        self.tools = [_tool(schema) for schema in episode.policy_briefing.tools]
        if respond_tool:
            self.tools.append(
                types.Tool(
                    name=RESPOND_TOOL,
                    description=(
                        "Send a message to the customer; returns the customer's answer. Set "
                        "end_conversation when it is your closing message: the conversation ends."
                    ),
                    input_schema={
                        "type": "object",
                        "properties": {
                            "message": {"type": "string"},
                            "end_conversation": {"type": "boolean", "default": False},
                        },
                        "required": ["message"],
                    },
                )
            )
        self._schemas = {tool.name: tool.input_schema for tool in self.tools}
        self._busy = threading.Lock()  # every step of this trial through here: one at a time

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of the tool called `name` (None for a tool this trial does not offer)."""
        return self._schemas.get(name)

    async def call_async(self, params: types.CallToolRequestParams) -> types.CallToolResult:
        """`call`, from the server's event loop: inline when it cannot wait on anything."""
        episode = self.episode
        user_free = params.name != RESPOND_TOOL or not self.respond_tool or episode.never_blocks("user")
        critic_free = episode.critic is None or episode.never_blocks("critic")
        if user_free and critic_free and self._busy.acquire(blocking=False):
            try:
                return self._call(params.name, params.arguments)
            finally:
                self._busy.release()
        return await anyio.to_thread.run_sync(self.call, params.name, params.arguments)

    def step(self, action: Any) -> StepOutcome:
        """Step the episode (for its driver: an agent service's reply), never beside a tool call."""
        with self._busy:
            return self.episode.step(action)

    def instructions(self) -> str:
        """The domain's policy (the agent's system prompt), and the customer's first message when
        the MCP client talks to the customer itself."""
        text = self.episode.policy_briefing.policy
        if self.respond_tool:
            text += f"\n\nThe customer's first message:\n{self.episode.opening}"
        return text

    def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Step the episode with this call."""
        with self._busy:
            return self._call(name, arguments)

    def _call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        episode = self.episode
        if episode.done:
            return _text(f"This conversation has ended ({episode.end_reason}); nothing was executed.", True)
        if self.respond_tool and name == RESPOND_TOOL:
            message = (arguments or {}).get("message")
            if not isinstance(message, str):  # its schema says string: 5 is not a message to coerce
                given = type(message).__name__ if message is not None else "nothing"
                return _text(f"{RESPOND_TOOL} needs 'message', a string (got {given}); nothing sent", True)
            end = (arguments or {}).get("end_conversation", False)
            if not isinstance(end, bool):
                return _text(f"{RESPOND_TOOL}: 'end_conversation' must be true or false; nothing sent", True)
            action: Any = ReplyAction(text=message, end=end)
        else:
            action = ToolCallAction(name=name, arguments=arguments or {})
        outcome = episode.step(action)
        observation = outcome.observation
        if isinstance(observation, CritiqueTurn):  # the verdict, structured, for agents that use it
            return _text(
                critique_text(observation.verdict), True, {"verdict": verdict_json(observation.verdict)}
            )
        if isinstance(observation, UserTurn):
            ended = ""
            if episode.end_reason == "agent_stop":
                ended = " [You have ended the conversation.]"
            elif episode.done:
                ended = " [The customer has ended the conversation.]"
            return _text(observation.text + ended, False)
        if observation is None:
            return _text(f"This conversation has ended ({episode.end_reason}): {episode.error}", True)
        return _text(observation.content, observation.error)
