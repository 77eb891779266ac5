"""Hand-built retail conversations for the labeler and rules-critic tests.

Tool results come from the real retail tools run on the chat's own database, so what the
conversation shows is exactly what an agent would have seen.
"""

from __future__ import annotations

from typing import Any

from castbench._agents.scripted.plan import describe_call
from castbench._base.conversation import (
    AgentTurn,
    Event,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._base.dialogue import confirmation_request
from castbench.domain import Database, Domain, Task, ToolCall

__all__ = ["Chat", "call"]

YES = "Yes, please go ahead."
NO = "No, please don't do that. I have changed my mind."


def call(name: str, **arguments: Any) -> ToolCallAction:
    return ToolCallAction(name=name, arguments=arguments)


class Chat:
    def __init__(self, domain: Domain, task: Task | None = None, db: Database | None = None) -> None:
        self.domain = domain
        self.task = task
        self.db = db if db is not None else domain.fresh_database()
        self.events: list[Event] = []
        if task is not None:
            self.user(task.scenario.request)

    @property
    def conversation(self) -> tuple[Event, ...]:
        return tuple(self.events)

    def user(self, text: str) -> Chat:
        self.events.append(UserTurn(text=text))
        return self

    def say(self, text: str) -> Chat:
        self.events.append(AgentTurn(action=ReplyAction(text=text)))
        return self

    def facts(self, *names: str) -> Chat:
        """The user states these facts of the task (asked for by name first)."""
        assert self.task is not None
        by_name = {fact.name: fact for fact in self.task.scenario.facts}
        self.say(f"Could you please tell me your {', '.join(names)}?")
        return self.user(" ".join(by_name[name].statement for name in names))

    def run(self, name: str, **arguments: Any) -> ToolResultTurn:
        """The agent calls a tool; it executes on this chat's database."""
        call_id = f"call_{len(self.events)}"
        observation = self.domain.toolkit.call(self.db, name, arguments)
        result = ToolResultTurn(
            call_id=call_id, name=name, content=observation.content, error=observation.error
        )
        self.events += [
            AgentTurn(action=ToolCallAction(name=name, arguments=arguments), call_id=call_id),
            result,
        ]
        return result

    def ask_to_confirm(self, name: str, answer: str = YES, **arguments: Any) -> Chat:
        self.say(confirmation_request(describe_call(ToolCall(name=name, arguments=arguments))))
        return self.user(answer)

    def truth(self, position: int) -> ToolCall:
        """The task's ground-truth agent call at this position."""
        assert self.task is not None
        return self.task.actions[position]

    def replay_truth(self, *positions: int) -> Chat:
        for position in positions:
            truth = self.truth(position)
            result = self.run(truth.name, **truth.arguments)
            assert not result.error, result.content
        return self
