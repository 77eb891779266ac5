"""Executable policy rules of a domain: what the rules critic and the labeler check.

The harness checks the domain-independent rules itself (a write needs an explicit confirmation
after it was described; ids and amounts must be supported by what the conversation showed).
A domain adds what only it knows, by subclassing `DomainRules`:

- which tools authenticate the user, and which may be used before that (given a toolkit, read
  from its tools' metadata, `Tool.authenticates` and `Tool.public`);
- `visible_findings`: preconditions that what the agent has *seen* already rules out (cancelling
  an order a tool result showed as delivered) — the deployed rules critic uses this, so it must
  look at the observed calls only;
- `state_findings`: the same preconditions checked on the *true* state at that step — the
  privileged labeler uses this.

Both are best written once against `castbench._domain.facts.Facts` (`ObservedFacts` for what the
agent saw, `TrueFacts` for the state).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from castbench._domain.database import Database
from castbench._domain.task import ToolCall

if TYPE_CHECKING:
    from castbench._domain.tools import Toolkit

__all__ = ["DomainRules", "ObservedCall", "RuleFinding"]

FailureType = Literal["hallucination", "domain_violation", "wrong_tool"]


@dataclass(frozen=True, slots=True)
class RuleFinding:
    failure_type: FailureType
    message: str


@dataclass(frozen=True, slots=True)
class ObservedCall:
    """A tool call the agent made earlier in the conversation, with what it returned."""

    name: str
    arguments: dict[str, Any]
    content: str
    error: bool

    def result(self) -> Any:
        """The parsed JSON result, or the raw text."""
        try:
            return json.loads(self.content)
        except (json.JSONDecodeError, TypeError):
            return self.content


class DomainRules:
    """Defaults: every tool except `public_tools` needs an authenticated user; no preconditions."""

    auth_tools: frozenset[str] = frozenset()
    """Tools whose successful result authenticates the user (e.g. find the user by email)."""
    public_tools: frozenset[str] = frozenset()
    """Tools that need no authenticated user (catalogue look-ups, calculator, transfer)."""
    free_text_tools: frozenset[str] = frozenset()
    """Tools whose arguments are the agent's own arithmetic or words (a calculator, a note to
    itself) and that read and change no data: the rules critic does not ask what supports them."""
    reason_synonyms: Mapping[str, tuple[str, ...]] = {}
    """Other ways people say a reason the domain's tasks name (a wording -> its synonyms, from
    the domain's vocabulary): a reply that says a synonym says the reason, and where the reason
    is false for a task, makes that false claim (`Task.with_synonyms`; `domains validate` checks
    that no synonym is another reason's wording)."""

    def __init__(self, toolkit: Toolkit | None = None) -> None:
        """With `toolkit`, the rules follow its tools' metadata: `auth_tools` and `public_tools`
        are the tools marked `authenticates` and `public`, whatever they are named."""
        self.toolkit = toolkit
        if toolkit is not None:
            self.auth_tools = frozenset(tool.name for tool in toolkit if tool.authenticates)
            self.public_tools = frozenset(tool.name for tool in toolkit if tool.public)

    def visible_findings(self, call: ToolCall, observed: list[ObservedCall]) -> list[RuleFinding]:
        """Rule breaks that the conversation so far already shows (no privileged data)."""
        return []

    def state_findings(self, call: ToolCall, db: Database) -> list[RuleFinding]:
        """Rule breaks judged on the true state just before the call (privileged)."""
        return []
