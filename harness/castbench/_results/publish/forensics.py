"""Clairvoyance forensics: passing trials whose writes use identifiers nobody had told the agent.

An agent that sees only its briefing and the conversation learns a domain identifier (an order,
reservation, customer, item or payment id, an email, a phone number) from the user or from a
tool's output before it can act on it. A passing trial whose state-changing call names one that
nothing before that call revealed could not have been played that way: its actions came from
somewhere else (the ground truth, another run's trajectories, the task files). `verify`, `import`
and `leaderboard build` count such trials, and refuse a run whose agents declared no privilege
that has any.

What counts as revealed before a call: the user's words (the opening and every answer), every
earlier tool result (errors included), every critique the policy was shown, and what the
briefing gives any agent: the domain's policy text, its tool schemas, and the output of its read
tools that take no argument (catalogues an agent may list at any time). Values are compared
normalised: case, a leading `#`, surrounding punctuation, and for phone-like numbers the
separators do not matter.

What counts as an identifier: a string argument (at any depth) that the domain's data holds (a
row's key, or a value in a row) and that has the shape of one: an `@`, or a digit in a token that
is not a date, a time or a plain number of fewer than five digits. Quantities, amounts, booleans
and enum-like words ("economy", "credit_card") never count, nor values an agent derives (a new
date, a sum), which the data does not hold.

This catches careless forgeries and leaks (a relabelled oracle export, an agent that read the
task files), not careful ones: an export cannot prove which agent produced it. What a board can
promise rests on provenance: rows it re-ran itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel

from castbench._base.conversation import ToolCallAction, ToolResultTurn, UserTurn
from castbench._domain.domain import Domain
from castbench._records.trial import TrialRecord

__all__ = [
    "ClairvoyantTrial",
    "ForensicsReport",
    "ForensicsTally",
    "examine_run",
    "examine_trial",
    "identifier_index",
]

_SHOWN = 5
_TOKEN = re.compile(r"[\w@.+#-]+")
_PHONE = re.compile(r"\+?[\d(][\d\s().-]{6,}\d")
_NOT_IDS = (
    re.compile(r"\d{4}-\d{2}(-\d{2}([ t]\d{2}:\d{2}(:\d{2})?([+-]\d{2}:\d{2}|z)?)?)?"),  # dates
    re.compile(r"\d{1,2}:\d{2}(:\d{2})?"),  # times
    re.compile(r"-?\d{1,4}(\.\d+)?|-?\d+\.\d+"),  # quantities, amounts
)


class ClairvoyantTrial(BaseModel):
    domain: str
    task_id: str
    trial_index: int
    step: int
    """The first step whose write used an identifier nothing had revealed."""
    tool: str
    identifiers: list[str]

    def describe(self) -> str:
        ids = ", ".join(repr(value) for value in self.identifiers)
        return (
            f"{self.domain} task {self.task_id} trial {self.trial_index}: step {self.step} "
            f"{self.tool} uses {ids}, which nothing in the conversation revealed"
        )


class ForensicsReport(BaseModel):
    run_id: str
    privileged: list[str]
    """Roles the run declares privileged: their agents read the task, so clairvoyance is allowed."""
    passing_trials: int
    """Passing trials examined."""
    clairvoyant: list[ClairvoyantTrial]

    @property
    def refused(self) -> bool:
        """A run of agents that declared no privilege, with clairvoyant trials."""
        return bool(self.clairvoyant) and not self.privileged

    def describe(self) -> str:
        if not self.clairvoyant:
            return f"run {self.run_id}: no clairvoyant trial among {self.passing_trials} passing trials"
        lines = [trial.describe() for trial in self.clairvoyant[:_SHOWN]]
        more = len(self.clairvoyant) - _SHOWN
        allowed = f" (allowed: privileged {', '.join(self.privileged)})" if self.privileged else ""
        return (
            f"run {self.run_id}: {len(self.clairvoyant)} of {self.passing_trials} passing trials are "
            f"clairvoyant{allowed}\n  "
            + "\n  ".join(lines)
            + (f"\n  ... and {more} more" if more > 0 else "")
        )


def _normal(value: str) -> str:
    return value.strip().strip("\"'()[]{}<>,;:!?.").lstrip("#").lower()


def _id_shaped(value: str) -> bool:
    if "@" in value:
        return True
    if not any(char.isdigit() for char in value) or len(value) < 4:
        return False
    return not any(pattern.fullmatch(value) for pattern in _NOT_IDS)


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _json_strings(text: str) -> Iterator[str]:
    """The strings inside a tool result that is JSON (nested at any depth), or nothing."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[", '"')):
        return
    try:
        value = json.loads(text)
    except ValueError:
        return
    yield from _strings(value)


class _Revealed:
    """What the agent had been shown so far, normalised for lookups."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self.tokens: set[str] = set()
        self.phones: set[str] = set()
        self._texts: list[str] = []
        self._joined: str | None = None
        for text in texts:
            self.add(text)

    def add(self, text: str) -> None:
        lowered = text.lower()
        self._texts.append(" ".join(lowered.replace("#", "").split()))
        self._joined = None
        for token in _TOKEN.findall(lowered):
            self.tokens.add(_normal(token))
        for value in _json_strings(text):
            self.tokens.add(_normal(value))
        for phone in _PHONE.findall(text):
            self.phones.add(_digits(phone))

    def copy(self) -> _Revealed:
        twin = _Revealed()
        twin.tokens, twin.phones, twin._texts = set(self.tokens), set(self.phones), list(self._texts)
        return twin

    def knows(self, value: str) -> bool:
        normal = _normal(value)
        if normal in self.tokens:
            return True
        if any(char.isspace() for char in normal):  # an address, a name: as a phrase
            if self._joined is None:
                self._joined = "\n".join(self._texts)
            if " ".join(normal.split()) in self._joined:
                return True
        digits = _digits(normal)
        return len(digits) >= 7 and _PHONE.fullmatch(value.strip()) is not None and digits in self.phones


_INDEX: dict[tuple[str, str], frozenset[str]] = {}
_BRIEFING: dict[tuple[str, str], _Revealed] = {}


def identifier_index(domain: Domain) -> frozenset[str]:
    """Every identifier-shaped string the domain's data holds (row keys and values), normalised."""
    key = (domain.name, domain.version)
    if key not in _INDEX:
        found: set[str] = set()
        for table, rows in domain.pristine.items():
            if table.startswith("_"):
                continue
            for row_key, row in rows.items():
                for value in (row_key, *_strings(row)):
                    normal = _normal(value)
                    if _id_shaped(normal):
                        found.add(normal)
        _INDEX[key] = frozenset(found)
    return _INDEX[key]


def _briefing(domain: Domain) -> _Revealed:
    """What every agent of the domain is given or can list without knowing anything: the policy,
    the tool schemas, and the output of the read tools that take no argument (a fresh copy)."""
    key = (domain.name, domain.version)
    if key not in _BRIEFING:
        db = domain.fresh_database()
        listed = [
            domain.toolkit.call(db.fork(), tool.name, {}).content
            for tool in domain.toolkit
            if not tool.writes and not tool.schema["function"]["parameters"].get("properties")
        ]
        _BRIEFING[key] = _Revealed((domain.policy, json.dumps(domain.toolkit.schemas), *listed))
    return _BRIEFING[key].copy()


def clairvoyant_call(domain: Domain, action: ToolCallAction, revealed: _Revealed) -> list[str]:
    """The identifiers of a write call that nothing revealed (empty for a read, or an honest write)."""
    if not domain.toolkit.is_write(action.name):
        return []
    arguments: Any = action.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return []
    index = identifier_index(domain)
    unrevealed: list[str] = []
    for value in _strings(arguments):
        normal = _normal(value)
        if normal in index and not revealed.knows(value) and value not in unrevealed:
            unrevealed.append(value)
    return unrevealed


def examine_trial(domain: Domain, record: TrialRecord) -> ClairvoyantTrial | None:
    """The first write of a passing trial that used an unrevealed identifier, or None."""
    revealed = _briefing(domain)
    revealed.add(record.opening)
    for step in record.steps:
        for proposal in step.proposals[:-1]:  # critiques seen before the final proposal
            if proposal.verdict is not None and proposal.verdict.flags:
                revealed.add(proposal.verdict.explanation)
                revealed.add(proposal.verdict.suggested_fix or "")
        executed = step.action
        failed = isinstance(step.observation, ToolResultTurn) and step.observation.error
        if isinstance(executed, ToolCallAction) and not failed:
            unrevealed = clairvoyant_call(domain, executed, revealed)
            if unrevealed:
                return ClairvoyantTrial(
                    domain=record.domain,
                    task_id=record.task_id,
                    trial_index=record.trial_index,
                    step=step.index,
                    tool=executed.name,
                    identifiers=unrevealed,
                )
        observation = step.observation
        if isinstance(observation, UserTurn):
            revealed.add(observation.text)
        elif isinstance(observation, ToolResultTurn):
            revealed.add(observation.content)
    return None


class ForensicsTally:
    """Passing trials examined one at a time (`add`), for a reader that walks a run once
    (`verify`); `report` gives what `examine_run` gives."""

    def __init__(self) -> None:
        self.passing = 0
        self.clairvoyant: list[ClairvoyantTrial] = []

    def add(self, record: TrialRecord, domain: Domain | None) -> None:
        """One trial (`domain`: the installed domain, None when it is not installed: its trials
        cannot be examined, and `verify` already refuses them)."""
        if not record.passed:
            return
        self.passing += 1
        if domain is not None and (found := examine_trial(domain, record)) is not None:
            self.clairvoyant.append(found)

    def report(self, run_id: str, privileged: Iterable[str]) -> ForensicsReport:
        return ForensicsReport(
            run_id=run_id,
            privileged=sorted(privileged),
            passing_trials=self.passing,
            clairvoyant=self.clairvoyant,
        )


def examine_run(
    run_id: str, privileged: list[str], trials: Iterable[TrialRecord], domains: dict[str, Domain | None]
) -> ForensicsReport:
    """Every passing trial of a run examined (`domains`: name -> the installed domain, None when it
    is not installed: its trials cannot be examined, and `verify` already refuses them)."""
    tally = ForensicsTally()
    for record in trials:
        tally.add(record, domains.get(record.domain))
    return tally.report(run_id, privileged)
