"""Scripted users that misbehave on purpose, as LLM user simulators do (τ² tracker #182: up to a
third of failed retail runs were the simulator's fault). Each is the scripted user with one fault:

- `scripted:leaky`: states every fact it should keep until asked in its first reply, and answers
  a request to confirm by reciting its private brief instead of yes or no;
- `scripted:contradicting`: states its facts with wrong values and sticks to them, and says no to
  the change it came for;
- `scripted:quitter`: answers the agent's first message, then leaves mid-task.

They measure whether failure attribution (`castbench._results.attribution`) blames the user for the
failures they cause; a run with them is a test of the harness, not of an agent.
"""

from __future__ import annotations

from castbench._agents.protocols import UserReply
from castbench._agents.scripted.user import ScriptedUser, garble
from castbench._agents.views import UserBriefing
from castbench._base.dialogue import asks_confirmation

__all__ = ["ContradictingUser", "LeakyUser", "QuitterUser"]


class LeakyUser(ScriptedUser):
    def __init__(self, briefing: UserBriefing, patience: int = 4) -> None:
        super().__init__(briefing, patience)
        self._leaked = False

    def reply(self, message: str) -> UserReply:
        if asks_confirmation(message):
            return UserReply(f"Let me tell you everything I was told. {self._scenario.instructions}")
        if not self._leaked and self._scenario.facts:
            self._leaked = True
            self._said |= {fact.name for fact in self._scenario.facts}
            return UserReply(" ".join(fact.statement for fact in self._scenario.facts))
        return super().reply(message)


class ContradictingUser(ScriptedUser):
    def __init__(self, briefing: UserBriefing, patience: int = 4) -> None:
        super().__init__(briefing, patience)
        self._wrong = {
            fact.name: fact.statement.replace(fact.value, garble(fact.value, self._rng))
            for fact in self._scenario.facts
            if fact.value in fact.statement
        }

    def reply(self, message: str) -> UserReply:
        text = message.lower()
        asked = [fact for fact in self._scenario.facts if any(k.lower() in text for k in fact.keywords)]
        if asked:
            self._said |= {fact.name for fact in asked}
            return UserReply(" ".join(self._wrong.get(fact.name, fact.statement) for fact in asked))
        if asks_confirmation(message):
            return UserReply("No, that is not what I asked for. Don't do that.")
        return super().reply(message)


class QuitterUser(ScriptedUser):
    def __init__(self, briefing: UserBriefing, patience: int = 4) -> None:
        super().__init__(briefing, patience)
        self._replies = 0

    def reply(self, message: str) -> UserReply:
        self._replies += 1
        if self._replies > 1:
            return UserReply("Actually, I have to go now. Bye.", stop=True)
        return super().reply(message)
