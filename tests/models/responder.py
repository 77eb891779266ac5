"""A deterministic 'model' for the fault server: it plays castbench's scripted agents over HTTP.

The model name in the request picks the role: `policy` replays the oracle (in either policy
style), `critic` judges every action valid, `user` replays the scripted user. Each answer is
rebuilt from the request's messages alone, so a retried request gets the very same answer and
infrastructure faults cannot change a trial's outcome.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from castbench._agents.models.render import REPLY, TOOL_RESULT_PREFIX
from castbench._agents.scripted.oracle import OraclePolicy
from castbench._agents.scripted.user import ScriptedUser
from castbench._agents.views import PolicyView, PrivilegedBriefing, UserBriefing, briefing_for
from castbench._base.conversation import AgentTurn, Event, ReplyAction, ToolCallAction, UserTurn
from castbench.domain import Domain, Task

__all__ = ["InFlight", "ScriptedResponder", "unique_openings"]

STOP = "###STOP###"


def unique_openings(tasks: list[Task]) -> list[Task]:
    """Tasks whose opening request no other task shares (the responder tells tasks apart by it)."""
    counts: dict[str, int] = {}
    for task in tasks:
        counts[task.scenario.request] = counts.get(task.scenario.request, 0) + 1
    return [task for task in tasks if counts[task.scenario.request] == 1]


class ScriptedResponder:
    def __init__(self, domain: Domain, tasks: list[Task]) -> None:
        self.domain = domain
        self.by_request = {task.scenario.request: task for task in unique_openings(tasks)}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        role = body["model"]
        if role == "critic":
            verdict = {
                "verdict": "valid",
                "failure_type": "none",
                "explanation": "Fine.",
                "suggested_fix": "",
            }
            return {"content": json.dumps(verdict)}
        if role == "user":
            return {"content": self._user(body["messages"])}
        return self._policy(body)

    def _task(self, opening: str) -> Task:
        return self.by_request[opening]

    def _policy(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"][1:]
        task = self._task(messages[0]["content"])
        briefing = briefing_for(self.domain, task, 0, 0, privileged=True)
        assert isinstance(briefing, PrivilegedBriefing)
        oracle = OraclePolicy(briefing)
        events: list[Event] = []
        for message in messages:
            content = message.get("content") or ""
            if message["role"] == "user" and not content.startswith((TOOL_RESULT_PREFIX, "Reviewer:")):
                events.append(UserTurn(text=content))
            elif message["role"] == "assistant":
                oracle.propose(PolicyView(briefing, tuple(events)))  # replays its own earlier turn
                events.append(AgentTurn(action=ReplyAction(text=content or "(call)")))
        action = oracle.propose(PolicyView(briefing, tuple(events)))
        if not body.get("tools"):  # prompted style: one JSON object in the text
            if isinstance(action, ToolCallAction):
                return {"content": json.dumps({"action": action.name, "arguments": action.arguments})}
            assert isinstance(action, ReplyAction)
            return {"content": json.dumps({"action": REPLY, "message": action.text})}
        if isinstance(action, ToolCallAction):
            return {
                "content": None,
                "tool_calls": [{"name": action.name, "arguments": json.dumps(action.arguments)}],
            }
        assert isinstance(action, ReplyAction)
        return {"content": action.text}

    def _user(self, messages: list[dict[str, Any]]) -> str:
        opening = messages[1]["content"]
        task = self._task(opening)
        user = ScriptedUser(UserBriefing(domain=self.domain.name, scenario=task.scenario, seed=0))
        reply = None
        for message in messages[2:]:
            if message["role"] == "user":
                reply = user.reply(message["content"])
        assert reply is not None
        return f"{reply.text} {STOP}" if reply.stop else reply.text


class InFlight:
    """A responder that answers after `delay_s` and records the most requests it held at once."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.now = 0
        self.peak = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.delay_s)
        with self._lock:
            self.now -= 1
        return {"content": "One moment, please."}
