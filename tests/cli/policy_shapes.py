"""Policies given in shapes other than a class (issue 60): a working factory function, an agent
object, a function that cannot take the briefing, a factory that returns no agent."""

from __future__ import annotations

from typing import Any

from castbench.agents import ReplyAction


class Polite:
    def __init__(self, briefing: Any, **params: Any) -> None:
        self.briefing = briefing

    def propose(self, view: Any) -> ReplyAction:
        return ReplyAction(text="I am sorry, I cannot help with that.")


def polite(briefing: Any, **params: Any) -> Polite:
    """A factory function: builds a fresh agent per trial."""
    return Polite(briefing, **params)


agent_object = Polite(None)
"""An agent built at import: one object for every trial."""

greeting = "hello"


def two_arguments(first: Any, second: Any) -> Polite:
    return Polite(first)


def returns_text(briefing: Any, **params: Any) -> str:
    return "hello"
