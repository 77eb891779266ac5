"""The phrases scripted agents and the scripted user share, and how each recognises the other's.

Scripted roles talk in plain sentences (so an LLM on the other side understands them too); the
recognisers are deliberately tolerant so a model policy can drive the scripted user as well.
"""

from __future__ import annotations

import re

__all__ = [
    "ANYTHING_ELSE",
    "ask_again",
    "ask_for",
    "asks_anything_else",
    "asks_confirmation",
    "says_goodbye",
    "confirmation_request",
    "device_instruction",
    "gives_reason",
    "instructions_to_user",
    "is_affirmative",
    "is_negative",
]

ANYTHING_ELSE = "Is there anything else I can help you with?"

_CONFIRM = re.compile(r"\b(confirm|proceed|go ahead|yes or no|shall i|should i|do you want me to)\b")
_ANYTHING_ELSE = re.compile(r"anything else|something else|any other (request|question)")
_GOODBYE = re.compile(r"\b(good-?\s?bye|bye|farewell|have a (great|good|nice|wonderful) (day|evening|one))\b")
_NEGATIVE = re.compile(r"^\W*(no|nope|don't|do not|not now|cancel that|stop)\b")
_REASON = re.compile(r"\b(because|since|so that|in order to|the reason)\b")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSES = re.compile(r"[,;:()\u2014]|\s-\s|\bthen\b|\band\b")
_ADDRESSED = re.compile(r"\b(you|your|please|let's|let us)\b")
_IMPERATIVE = re.compile(
    r"^\W*(now\s+)?(turn|switch|open|reset|restart|reboot|take|put|swipe|go|check|toggle|try|tap|enable|"
    r"disable|remove|insert|reinsert|power|choose|select|press|hold|set|navigate|read|look)\b"
)
_FORBIDS = re.compile(r"\b(don't|do not|never|no need to|shouldn't|should not|must not|mustn't)\b")
_AFFIRMATIVE = re.compile(r"^\W*(yes|yeah|yep|sure|ok|okay|confirm|confirmed|please do|go ahead|correct)\b")


def ask_for(names: list[str]) -> str:
    return f"I can help with that. First, could you please tell me your {_listed(names)}?"


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def ask_again(names: list[str]) -> str:
    return f"Sorry, I still need your {_listed(names)}. Could you please tell me?"


def confirmation_request(description: str, with_reason: bool = False) -> str:
    if with_reason:
        return (
            "I ask because our policy requires your explicit yes before I change anything. "
            f"Here is exactly what will happen: {description}. Do you confirm? Please answer yes or no."
        )
    return f"Here is what I am about to do: {description}. Do you confirm? Please answer yes or no."


def instructions_to_user(message: str) -> list[str]:
    """The sentences of `message` that tell the user to do something (lowercased): addressed to
    them ("you", "your", "please", "let's") or with a clause in the imperative ("turn mobile data
    on"), and not forbidding it ("do not restart"). A policy pasted into a reply ("the APN must be
    `internet`; the customer resets the APN settings") tells the user nothing, so the scripted user
    does not act on it, as a customer would not."""
    found = []
    for sentence in _SENTENCES.split(message.lower()):
        if not sentence.strip() or _FORBIDS.search(sentence):
            continue
        if _ADDRESSED.search(sentence) or any(
            _IMPERATIVE.match(clause) for clause in _CLAUSES.split(sentence)
        ):
            found.append(sentence)
    return found


def device_instruction(instruction: str) -> str:
    """How an agent tells the user to do a device step; the user acts when it holds the step's
    keywords, so `validate_task` checks this very sentence triggers that step and no other."""
    return f"Please do this on your device: {instruction}"


def gives_reason(message: str) -> bool:
    return bool(_REASON.search(message.lower()))


def is_negative(message: str) -> bool:
    return bool(_NEGATIVE.search(message.lower()))


def asks_confirmation(message: str) -> bool:
    return bool(_CONFIRM.search(message.lower()))


def says_goodbye(message: str) -> bool:
    """Whether the agent takes its leave ("Goodbye.", "Have a great day!"): the scripted user
    answers a farewell with its own and ends the conversation, instead of "Okay." until its
    patience runs out."""
    return bool(_GOODBYE.search(message.lower()))


def asks_anything_else(message: str) -> bool:
    return bool(_ANYTHING_ELSE.search(message.lower()))


def is_affirmative(message: str) -> bool:
    text = message.lower()
    return not _NEGATIVE.search(text) and bool(_AFFIRMATIVE.search(text))
