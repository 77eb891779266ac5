"""The spray floor: a task-blind agent that looks everything up, offers anything and says everything.

`scripted:lookup-spray` never changes anything. It makes the look-ups `scripted:lookup-refuse`
makes (it asks for the user's details by the names of the read tools' arguments and calls every
read tool it can fill from what the user said and what any result showed), puts one "would you
like me to ...?" question naming every change the tools allow and every id it saw, then states
every reason the policy gives (each of its sentences with a "cannot", "only", "never" ...) and
every value it saw, and asks whether there is anything else. It is what a reviewer builds to test
whether a benchmark grades what a reply claims or only what it contains: on castbench's grading
it should earn no more than `scripted:lookup-refuse` (see `castbench._run.floors`).

Its parameters turn parts of the spray off, so tests can try each kind on its own, and `tied`
says each value beside the name of the record that holds it, one list line each ("- B1: 37.31"),
instead of as one bare list: every value is then said of its own record, and still none is said
to be the answer or the reason. Not privileged: it sees only its `Briefing` and the visible
conversation.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from castbench._agents.scripted.refusers import REFUSAL, LookupRefusePolicy, records
from castbench._agents.views import Briefing, PolicyView
from castbench._base.conversation import Action, ReplyAction, ToolResultTurn
from castbench._base.dialogue import ANYTHING_ELSE
from castbench._domain.leaves import scalars

__all__ = ["LookupSprayPolicy", "SprayParams", "policy_reasons"]

_RULE = re.compile(
    r"\b(cannot|can't|not allowed|never|only|no longer|unless|decline|refuse)\b", re.IGNORECASE
)
"""What makes a sentence a reason to refuse."""
_BLOCKS = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.)\s)")
"""Paragraphs and list items: a policy's lines wrap inside them."""
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_MARKUP = re.compile(r"[*#`_>]+|^\s*(?:[-*]|\d+\.)\s+")


class SprayParams(BaseModel):
    reasons: bool = Field(True, description="state every rule of the policy as the reason")
    values: bool = Field(True, description="state every value the look-ups showed")
    offer: bool = Field(True, description="ask one question offering every change for every id")
    tied: bool = Field(False, description="say each value beside its record's name, a line each")


def policy_reasons(policy: str) -> list[str]:
    """Every sentence of `policy` that gives a reason to refuse (holds a "cannot", "only",
    "never", "no longer", "unless", "decline" ...), without its markup: the refusal reasons a
    task-blind agent knows."""
    blocks = (" ".join(_MARKUP.sub("", block).split()) for block in _BLOCKS.split(policy))
    sentences = (sentence for block in blocks for sentence in _SENTENCES.split(block))
    return list(dict.fromkeys(s for s in sentences if _RULE.search(s)))


def _parsed(content: str) -> Any:
    try:
        return json.loads(content)
    except json.JSONDecodeError:
        return content


class LookupSprayPolicy(LookupRefusePolicy):
    """Looks up everything it can reach, offers every change, then states every reason and value."""

    privileged: ClassVar[bool] = False

    def __init__(
        self,
        briefing: Briefing,
        reasons: bool = True,
        values: bool = True,
        offer: bool = True,
        tied: bool = False,
    ) -> None:
        super().__init__(briefing)
        self._writes = sorted(name.replace("_", " ") for name in briefing.write_tools)
        self._reasons = policy_reasons(briefing.policy) if reasons else []
        self._say_values, self._offer, self._tied = values, offer, tied
        self._said: list[str] = []

    def propose(self, view: PolicyView) -> Action:
        if not self._asked:
            self._asked = True
            return ReplyAction(text=self._asking())
        if not self._said:
            call = self._next_lookup(view)
            if call is not None:
                return call
        for stage, wanted in (("offer", self._offer), ("spray", True)):
            if wanted and stage not in self._said:
                self._said.append(stage)
                return ReplyAction(text=self._offering(view) if stage == "offer" else self._spray(view))
        return ReplyAction(text=ANYTHING_ELSE)

    @staticmethod
    def _results(view: PolicyView) -> list[str]:
        return [e.content for e in view.conversation if isinstance(e, ToolResultTurn) and not e.error]

    def _offering(self, view: PolicyView) -> str:
        ids = dict.fromkeys(
            str(record[key])
            for content in self._results(view)
            for record in records(content)
            for key in record
            if key.endswith("_id") and isinstance(record[key], str | int)
        )
        changes = ", ".join(self._writes) or "make a change"
        named = f" for {', '.join(ids)}" if ids else ""
        return f"Would you like me to {changes}{named}?"

    def _spray(self, view: PolicyView) -> str:
        parts = [REFUSAL]
        if self._reasons:
            parts.append("The reasons: " + " ".join(self._reasons))
        if self._say_values:
            results = self._results(view)
            statuses = dict.fromkeys(
                f"{record[key]} is {record['status']}"
                for content in results
                for record in records(content)
                for key in record
                if key.endswith("_id")
                and isinstance(record[key], str)
                and isinstance(record.get("status"), str)
            )
            values = dict.fromkeys(value for content in results for value in scalars(_parsed(content)))
            if statuses:
                parts.append("I checked your records: " + "; ".join(statuses) + ".")
            if self._tied:
                lines = self._tied_lines(results)
                if lines:
                    parts.append("What I found:\n" + "\n".join(lines))
            elif values:
                parts.append("What I found: " + ", ".join(values) + ".")
        return " ".join(parts)

    @staticmethod
    def _tied_lines(results: list[str]) -> list[str]:
        """ "- <name>: <value>" for every value of every record with a name (an `_id` field): the
        value's own record, the nearest one (a bill's charges are the bill's)."""
        lines: dict[str, None] = {}
        for content in results:
            for record in records(content):
                names = (str(v) for k, v in record.items() if k.endswith("_id") and isinstance(v, str | int))
                name = next(names, None)
                if name is None:
                    continue
                for key, value in record.items():
                    if not key.endswith("_id"):
                        for shown in scalars(value):
                            lines[f"- {name}: {shown}"] = None
        return list(lines)
