"""What is known about a domain's records: the true state, or what the conversation showed.

A domain's rules are written once against `Facts` and judged two ways: the privileged labeler
gives them `TrueFacts` (the state just before the call), the deployed rules critic gives them
`ObservedFacts` (earlier tool results only). `ObservedFacts` learns which record a result holds
from the tool's metadata (`Tool.returns`, `Tool.authenticates`), never from its name: a tool
that is renamed keeps being understood, so its rules keep being checked.

A fact that is not known is `None`, and a rule judges only what its facts know.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable
from functools import cache
from typing import Any, TypeVar

from pydantic import ValidationError

from castbench._domain.database import Database, Record, Row
from castbench._domain.rules import ObservedCall
from castbench._domain.tools import Toolkit, record_type

__all__ = ["Facts", "ObservedFacts", "TrueFacts"]

R = TypeVar("R", bound=Record)


class Facts(ABC):
    """Records by type and key, as far as they are known."""

    @abstractmethod
    def row(self, model: type[Record], key: object) -> Row | None:
        """The record as JSON; what a result showed may be a partial view of it."""

    def seen(self, model: type[Record], key: object) -> Row | None:
        """Whatever is known of the record, as JSON (`ObservedFacts`: from partial views too)."""
        return self.row(model, key)

    def record(self, model: type[R], key: object) -> R | None:
        """The record, when what is known of it is a whole one."""
        row = self.row(model, key)
        if row is None:
            return None
        try:
            return model.model_validate(row)
        except ValidationError:
            return None


class TrueFacts(Facts):
    """Everything, from the true state."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def row(self, model: type[Record], key: object) -> Row | None:
        record = self.record(model, key)
        return None if record is None else record.model_dump(mode="json")

    def record(self, model: type[R], key: object) -> R | None:
        if not isinstance(key, str) or not self.db.exists(model, key):
            return None
        return self.db.get(model, key)


class ObservedFacts(Facts):
    """What the successful tool results of the conversation showed: per record, the latest
    row a result holding that record type gave. A row with every field of the record replaces
    what was known; a partial one (a write's summary, say) updates the fields of a row already
    known and is otherwise left out of `row` (it alone does not say what the record is), but
    not out of `seen`. Records a result nests (a patient's appointments, in a field typed with
    their record) are learned as well; rows are kept per table, so a richer view of a record
    (`PatientDetails`, a `Patient` with more) is a row of the same record."""

    def __init__(
        self, toolkit: Toolkit, observed: Iterable[ObservedCall] = (), *, from_writes: bool = True
    ) -> None:
        """`from_writes=False`: learn records from reads only (a write's result is not taken as
        what the agent knows of the record)."""
        self.toolkit = toolkit
        self.from_writes = from_writes
        self.authentications: list[ObservedCall] = []
        """The successful calls of authenticating tools, in order."""
        self._rows: dict[str, dict[Hashable, Row]] = {}
        self._seen: dict[str, dict[Hashable, Row]] = {}
        self._listings: dict[str, list[dict[str, Any]]] = {}
        for call in observed:
            self.learn(call)

    def learn(self, call: ObservedCall) -> None:
        """Take in one more call of the conversation (a rule that must know what was known just
        before a call learns them one by one)."""
        tool = self.toolkit.get(call.name)
        if tool is None or call.error:
            return
        if tool.authenticates:
            self.authentications.append(call)
        if tool.returns is None or (tool.writes and not self.from_writes):
            return
        result = call.result()
        if isinstance(result, list):
            self._listings.setdefault(tool.returns.table, []).append(call.arguments)
        if tool.view is not None:
            result = tool.view(result)
        for row in result if isinstance(result, list) else [result]:
            self._learn(tool.returns, row)

    def _learn(self, model: type[Record], row: Any) -> None:
        key = row.get(model.key_field) if isinstance(row, dict) else None
        if not isinstance(key, Hashable) or key is None:
            return
        known = self._rows.setdefault(model.table, {})
        if model.model_fields.keys() <= row.keys():
            known[key] = row
        elif key in known:
            known[key].update(row)
        seen = self._seen.setdefault(model.table, {})
        seen[key] = _merged(seen.get(key, {}), row)
        for name, nested in _nested_records(model).items():
            value = row.get(name)
            for item in value if isinstance(value, list) else [value]:
                self._learn(nested, item)

    def row(self, model: type[Record], key: object) -> Row | None:
        if not isinstance(key, Hashable):
            return None
        return self._rows.get(model.table, {}).get(key)

    def seen(self, model: type[Record], key: object) -> Row | None:
        """Every field of the record any result showed, whole or partial rows alike, the latest
        value of each (nested objects merged: views of a flight on two dates add up)."""
        if not isinstance(key, Hashable):
            return None
        return self._seen.get(model.table, {}).get(key)

    def rows(self, model: type[Record]) -> list[Row]:
        """Every row of the record type that results showed, in the order first shown."""
        return list(self._rows.get(model.table, {}).values())

    def listed(self, model: type[Record], **arguments: Any) -> bool:
        """Whether a tool listed records of the type for these arguments (`get_bills` for a
        customer: then every bill of theirs is among `rows`)."""
        return any(
            all(listing.get(name) == value for name, value in arguments.items())
            for listing in self._listings.get(model.table, [])
        )


def _merged(known: Row, row: Row) -> Row:
    """`known` updated with `row`, objects in both merged key by key; neither is changed."""
    merged = dict(known)
    for name, value in row.items():
        before = known.get(name)
        if isinstance(before, dict) and isinstance(value, dict):
            value = _merged(before, value)
        merged[name] = value
    return merged


@cache
def _nested_records(model: type[Record]) -> dict[str, type[Record]]:
    """The fields of `model` that hold other records (one, or a list of them)."""
    found = {name: record_type(field.annotation) for name, field in model.model_fields.items()}
    return {name: nested for name, nested in found.items() if nested is not None}
