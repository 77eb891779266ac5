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
from typing import Any, TypeVar

from pydantic import ValidationError

from castbench.domain.database import Database, Record, Row
from castbench.domain.rules import ObservedCall
from castbench.domain.tools import Toolkit

__all__ = ["Facts", "ObservedFacts", "TrueFacts"]

R = TypeVar("R", bound=Record)


class Facts(ABC):
    """Records by type and key, as far as they are known."""

    @abstractmethod
    def row(self, model: type[Record], key: object) -> Row | None:
        """The record as JSON; what a result showed may be a partial view of it."""

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
    known and is otherwise left out (it alone does not say what the record is)."""

    def __init__(
        self, toolkit: Toolkit, observed: Iterable[ObservedCall], *, from_writes: bool = True
    ) -> None:
        """`from_writes=False`: learn records from reads only (a write's result is not taken as
        what the agent knows of the record)."""
        self.authentications: list[ObservedCall] = []
        """The successful calls of authenticating tools, in order."""
        self._rows: dict[type[Record], dict[Hashable, Row]] = {}
        self._listings: dict[type[Record], list[dict[str, Any]]] = {}
        for call in observed:
            tool = toolkit.get(call.name)
            if tool is None or call.error:
                continue
            if tool.authenticates:
                self.authentications.append(call)
            if tool.returns is not None and (from_writes or not tool.writes):
                self._learn(tool.returns, call)

    def _learn(self, model: type[Record], call: ObservedCall) -> None:
        result = call.result()
        if isinstance(result, list):
            self._listings.setdefault(model, []).append(call.arguments)
        known = self._rows.setdefault(model, {})
        for row in result if isinstance(result, list) else [result]:
            key = row.get(model.key_field) if isinstance(row, dict) else None
            if not isinstance(key, Hashable) or key is None:
                continue
            if model.model_fields.keys() <= row.keys():
                known[key] = row
            elif key in known:
                known[key].update(row)

    def row(self, model: type[Record], key: object) -> Row | None:
        if not isinstance(key, Hashable):
            return None
        return self._rows.get(model, {}).get(key)

    def rows(self, model: type[Record]) -> list[Row]:
        """Every row of the record type that results showed, in the order first shown."""
        return list(self._rows.get(model, {}).values())

    def listed(self, model: type[Record], **arguments: Any) -> bool:
        """Whether a tool listed records of the type for these arguments (`get_bills` for a
        customer: then every bill of theirs is among `rows`)."""
        return any(
            all(listing.get(name) == value for name, value in arguments.items())
            for listing in self._listings.get(model, [])
        )
