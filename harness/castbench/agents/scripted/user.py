"""A deterministic simulated user that needs no model.

It opens with the scenario's request, performs a device step on its own side when told to (all
of the step's keywords appear in the agent's message), reveals a hidden fact only when the agent's message asks
for it (one of the fact's keywords appears; new facts take precedence over a confirmation
request, so a confirmation that mentions an already-given email is still a confirmation), answers confirmation requests as the scenario says,
and ends the conversation when asked whether there is anything else, or when it loses patience
after several turns without progress.
"""

from __future__ import annotations

from castbench.agents.protocols import UserReply
from castbench.agents.scripted.dialogue import asks_anything_else, asks_confirmation
from castbench.agents.views import UserBriefing
from castbench.domain import ToolCall

__all__ = ["ScriptedUser"]


class ScriptedUser:
    def __init__(self, briefing: UserBriefing, patience: int = 4) -> None:
        self._scenario = briefing.scenario
        self._perform = briefing.perform
        self._patience = patience
        self._idle_turns = 0
        self._revealed: set[str] = set()

    def open(self) -> str:
        return self._scenario.request

    def reply(self, message: str) -> UserReply:
        text = message.lower()
        asked = [fact for fact in self._scenario.facts if any(k.lower() in text for k in fact.keywords)]
        new = [fact for fact in asked if fact.name not in self._revealed]
        if new:
            self._idle_turns = 0
            self._revealed.update(fact.name for fact in new)
            return UserReply(" ".join(fact.statement for fact in new))
        device = [
            step for step in self._scenario.device_steps if all(k.lower() in text for k in step.keywords)
        ]
        if device and self._perform is not None:
            self._idle_turns = 0
            return UserReply(" ".join(self._do(step.call) for step in device))
        if asks_confirmation(message):
            self._idle_turns = 0
            if self._scenario.confirm:
                return UserReply("Yes, please go ahead.")
            return UserReply("No, please don't do that. I have changed my mind.")
        if asked:  # asked again for something already said: say it again
            return UserReply(" ".join(fact.statement for fact in asked))
        if asks_anything_else(message):
            return UserReply("No, that's all. Thank you!", stop=True)
        self._idle_turns += 1
        if self._idle_turns >= self._patience:
            return UserReply("This is not getting anywhere. Goodbye.", stop=True)
        return UserReply("Okay.")

    def _do(self, call: ToolCall) -> str:
        assert self._perform is not None
        observation = self._perform(call)
        if observation.error:
            return f"I tried, but it says: {observation.content}"
        return f"Done. My device now shows: {observation.content}"
