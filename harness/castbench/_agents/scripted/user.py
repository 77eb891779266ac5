"""A deterministic simulated user that needs no model.

It opens with the scenario's request; reveals a hidden fact only when the agent's message asks
for it (one of the fact's keywords appears; new facts take precedence over a confirmation
request, so a confirmation that mentions an already-given email is still a confirmation);
performs a device step on its own side when told to (all of the step's keywords appear in one
sentence addressed to the user as an instruction, `instructions_to_user`: a policy pasted into a
reply is not an instruction);
answers confirmation requests as the scenario says; and ends the conversation when asked whether
there is anything else, when the agent says goodbye (with its own goodbye), or when it loses
patience.

Traits (see `castbench._agents.traits`) are acted out from the trial seed:
- impatience: short replies (few facts at a time); leaves after too many repeated questions;
- confusion: the first statement of a fact may be wrong or partial, corrected when asked again;
- skepticism: asks why before agreeing to a change that came without a reason;
- incoherence: off-topic remarks, and sometimes an off-topic answer before the real one.
"""

from __future__ import annotations

import random

from castbench._agents.protocols import UserReply
from castbench._agents.traits import patience, rate
from castbench._agents.views import UserBriefing
from castbench._base.dialogue import (
    asks_anything_else,
    asks_confirmation,
    gives_reason,
    instructions_to_user,
    says_goodbye,
)
from castbench._domain.task import Fact, ToolCall

__all__ = ["ScriptedUser"]

_DRIFT = [
    "Sorry, my cat just walked across the keyboard.",
    "By the way, the weather here has been awful all week.",
    "I also wonder whether you sell umbrellas, but never mind.",
    "Hold on, someone is at the door... okay, I'm back.",
    "My neighbour had the same problem last year, I think.",
]
_FACTS_PER_REPLY = {"low": 3, "medium": 2, "high": 1}


def garble(value: str, rng: random.Random) -> str:
    """A wrong or partial version of a value (what a confused user first says)."""
    digits = [i for i, ch in enumerate(value) if ch.isdigit()]
    if digits and rng.random() < 0.7:
        chars = list(value)
        position = rng.choice(digits)
        chars[position] = str((int(chars[position]) + rng.randrange(1, 9)) % 10)
        return "".join(chars)
    return value[: max(1, len(value) * 2 // 3)]


class ScriptedUser:
    def __init__(self, briefing: UserBriefing, patience: int = 4) -> None:
        self._scenario = briefing.scenario
        self._perform = briefing.perform
        self._patience = patience
        self._traits = briefing.traits or {}
        self._rng = random.Random(f"user:{briefing.seed}")
        self._idle_turns = 0
        self._repeats = 0
        self._said: set[str] = set()
        self._garbled: set[str] = set()
        self._confirmations = 0

    def open(self) -> str:
        return self._drift(self._scenario.request)

    def reply(self, message: str) -> UserReply:
        text = message.lower()
        asked = [fact for fact in self._scenario.facts if any(k.lower() in text for k in fact.keywords)]
        new = [fact for fact in asked if fact.name not in self._said]
        if new:
            return self._reveal(new)
        told = instructions_to_user(message)
        device = [
            step
            for step in self._scenario.device_steps
            if any(all(k.lower() in sentence for k in step.keywords) for sentence in told)
        ]
        if device and self._perform is not None:
            self._idle_turns = 0
            return UserReply(" ".join(self._do(step.call) for step in device))
        if asks_confirmation(message):
            return self._confirm(message)
        if asked:
            return self._repeat(asked)
        if asks_anything_else(message):
            return UserReply("No, that's all. Thank you!", stop=True)
        if says_goodbye(message):
            return UserReply("Thank you. Goodbye!", stop=True)
        self._idle_turns += 1
        if self._idle_turns >= self._patience:
            return UserReply("This is not getting anywhere. Goodbye.", stop=True)
        return UserReply(self._drift("Okay."))

    # -- the pieces of a reply -------------------------------------------------------------
    def _reveal(self, facts: list[Fact]) -> UserReply:
        self._idle_turns = 0
        incoherence = self._traits.get("incoherence")
        if incoherence == "high" and self._rng.random() < 0.3:
            return UserReply(self._rng.choice(_DRIFT))  # off-topic first; the agent must ask again
        impatience = self._traits.get("impatience")
        if impatience is not None:
            facts = facts[: _FACTS_PER_REPLY[impatience]]
        statements = []
        for fact in facts:
            self._said.add(fact.name)
            statements.append(self._first_statement(fact))
        return UserReply(self._drift(" ".join(statements)))

    def _first_statement(self, fact: Fact) -> str:
        confusion = self._traits.get("confusion")
        if confusion is None or fact.value not in fact.statement or self._rng.random() >= rate(confusion):
            return fact.statement
        self._garbled.add(fact.name)
        return fact.statement.replace(fact.value, garble(fact.value, self._rng))

    def _repeat(self, facts: list[Fact]) -> UserReply:
        corrected = [fact for fact in facts if fact.name in self._garbled]
        if corrected:
            self._garbled -= {fact.name for fact in corrected}
            return UserReply("Sorry, I mixed that up. " + " ".join(fact.statement for fact in corrected))
        impatience = self._traits.get("impatience")
        if impatience is not None:
            self._repeats += 1
            if self._repeats > patience(impatience):
                return UserReply("I already told you that. I don't have time for this. Goodbye.", stop=True)
            return UserReply("I already told you! " + " ".join(fact.statement for fact in facts))
        return UserReply(" ".join(fact.statement for fact in facts))

    def _confirm(self, message: str) -> UserReply:
        self._idle_turns = 0
        self._confirmations += 1
        skepticism = self._traits.get("skepticism")
        challenge = skepticism is not None and not gives_reason(message)
        if challenge and (skepticism != "low" or self._confirmations == 1):
            return UserReply("Hmm, why is that needed? What exactly will change?")
        if self._scenario.confirm:
            return UserReply("Yes, please go ahead.")
        return UserReply("No, please don't do that. I have changed my mind.")

    def _drift(self, text: str) -> str:
        incoherence = self._traits.get("incoherence")
        if incoherence is None or self._rng.random() >= rate(incoherence):
            return text
        return f"{self._rng.choice(_DRIFT)} {text}"

    def _do(self, call: ToolCall) -> str:
        assert self._perform is not None
        observation = self._perform(call)
        if observation.error:
            return f"I tried, but it says: {observation.content}"
        return f"Done. My device now shows: {observation.content}"
