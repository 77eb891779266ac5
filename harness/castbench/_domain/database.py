"""Copy-on-write domain state: one shared pristine snapshot, one private overlay per trial.

Why not a deep copy or a reloaded file per trial: τ-Bench spends most of its harness time
reloading, replaying and hashing whole databases. Here a trial's state is the pristine
snapshot (shared, never mutated) plus an overlay of the rows that trial wrote. Creating a
sandbox is O(1), and comparing two states that share a pristine snapshot only needs the rows
either of them touched.

Rows are stored as plain JSON-compatible dicts. Reads hand out *validated copies* (pydantic
models), so a tool that mutates what it read cannot corrupt shared state; writes are explicit
(`put`, `insert`, `delete`) and land in the current transaction.
"""

from __future__ import annotations

import copy
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["Database", "PristineIndex", "Record", "RecordNotFound", "Row", "SEQUENCES_TABLE", "Snapshot"]

Row = dict[str, Any]
Snapshot = Mapping[str, Mapping[str, Row]]
"""table -> key -> row: the pristine, shared state of a domain."""

SEQUENCES_TABLE = "_sequences"
"""Id counters (`{"next": int, "prefix": str, "width": int}` per sequence name). Kept in the
state so that they roll back with a failed tool call; never part of a grading diff."""

_DELETED = None  # overlay marker for a deleted row

_EVERYTHING = "*"
"""What a recorded computation "read" when it looked past the row API (the whole pristine state,
a materialised copy) or wrote: its value is never shared."""


class Record(BaseModel):
    """One row of domain state. Subclasses name their table and key field."""

    model_config = ConfigDict(extra="forbid")

    table: ClassVar[str]
    key_field: ClassVar[str]

    @property
    def key(self) -> str:
        return str(getattr(self, self.key_field))


R = TypeVar("R", bound=Record)


class RecordNotFound(LookupError):
    def __init__(self, table: str, key: str) -> None:
        super().__init__(f"{table} '{key}' not found")
        self.table = table
        self.key = key


def _hashable(value: object) -> Hashable:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return value  # type: ignore[return-value]


T = TypeVar("T")


class PristineIndex:
    """What is worked out once over a pristine snapshot and shared by every sandbox of a domain.

    - Row keys by field value, built on first use of a (table, field): `find` then costs
      O(matches), not O(table).
    - Remembered answers (`Database.read_through`): the value of a computation, with the tables it
      read, for any sandbox in which those tables are still pristine. Bounded in number and in
      bytes, least recently used first out, since an agent can ask for endless distinct things.
    """

    ANSWERS_KEPT = 4096
    ANSWER_BYTES_KEPT = 32 * 2**20

    def __init__(self, pristine: Snapshot) -> None:
        self._pristine = pristine
        self._maps: dict[tuple[str, str], dict[Hashable, list[str]]] = {}
        self._lock = threading.Lock()
        self._answers: OrderedDict[Hashable, tuple[frozenset[str], Any, int]] = OrderedDict()
        self._answer_bytes = 0

    def keys_where(self, table: str, field: str, value: object) -> list[str]:
        mapping = self._maps.get((table, field))
        if mapping is None:
            with self._lock:
                mapping = {}
                for key, row in self._pristine.get(table, {}).items():
                    mapping.setdefault(_hashable(row.get(field)), []).append(key)
                self._maps[(table, field)] = mapping
        return mapping.get(_hashable(value), [])

    def answer(self, key: Hashable) -> tuple[frozenset[str], Any] | None:
        with self._lock:
            entry = self._answers.get(key)
            if entry is None:
                return None
            self._answers.move_to_end(key)
            return entry[0], entry[1]

    def remember(self, key: Hashable, tables: frozenset[str], value: Any, size: int) -> None:
        with self._lock:
            replaced = self._answers.pop(key, None)
            if replaced is not None:
                self._answer_bytes -= replaced[2]
            self._answers[key] = (tables, value, size)
            self._answer_bytes += size
            while len(self._answers) > self.ANSWERS_KEPT or self._answer_bytes > self.ANSWER_BYTES_KEPT:
                self._answer_bytes -= self._answers.popitem(last=False)[1][2]


class Database:
    """A trial's private view of the domain state.

    `now` is the domain's frozen clock: tools read the time from here, never from the wall.
    """

    def __init__(self, pristine: Snapshot, now: datetime, index: PristineIndex | None = None) -> None:
        self._pristine = pristine
        self._index = index if index is not None else PristineIndex(pristine)
        self.now = now
        self._overlay: dict[str, dict[str, Row | None]] = {}
        self._pending: dict[str, dict[str, Row | None]] | None = None
        self._reads: set[str] | None = None  # tables read while `read_through` records
        self._writes = 0  # rows written so far (`version`)

    # -- remembered answers ----------------------------------------------------------------
    def _untouched(self, tables: frozenset[str] | set[str]) -> bool:
        if _EVERYTHING in tables:
            return False
        layers = (self._overlay,) if self._pending is None else (self._overlay, self._pending)
        return not any(layer.get(table) for layer in layers for table in tables)

    def read_through(
        self, key: Hashable, compute: Callable[[], T], size: Callable[[T], int] = lambda _: 0
    ) -> T:
        """`compute()`, or the value it had in another sandbox of the same pristine state.

        For a read-only tool call, whose answer depends on nothing but its arguments, the clock
        and the rows it reads: every trial of a task asks the same look-ups of the same pristine
        tables. The tables `compute` reads are recorded; its value is shared only while all of
        them are pristine here, so a sandbox that changed one of them computes its own. A
        computation that writes, or looks past the row API, is never shared. `compute` runs
        against this sandbox either way, so its value is always what it would have been here.
        `size`: the value's weight in bytes, against the shared answers' bound.
        """
        full_key = (key, self.now)
        entry = self._index.answer(full_key)
        if entry is not None and self._untouched(entry[0]):
            if self._reads is not None:  # nested: the outer computation read those tables too
                self._reads.update(entry[0])
            return entry[1]  # type: ignore[no-any-return]
        if self._reads is not None:  # nested: the outer computation records for both
            return compute()
        self._reads = set()
        try:
            value = compute()
        finally:
            reads, self._reads = self._reads, None
        if self._untouched(reads):
            self._index.remember(full_key, frozenset(reads), value, size(value))
        return value

    def _read(self, table: str) -> None:
        if self._reads is not None:
            self._reads.add(table)

    # -- reads -----------------------------------------------------------------------------
    def _raw(self, table: str, key: str) -> Row | None:
        self._read(table)
        if self._pending is not None:
            layer = self._pending.get(table)
            if layer is not None and key in layer:
                return layer[key]
        layer = self._overlay.get(table)
        if layer is not None and key in layer:
            return layer[key]
        return self._pristine.get(table, {}).get(key)

    def _raw_items(self, table: str) -> Iterator[tuple[str, Row]]:
        self._read(table)
        changed: dict[str, Row | None] = {}
        changed.update(self._overlay.get(table, {}))
        if self._pending is not None:
            changed.update(self._pending.get(table, {}))
        for key, row in self._pristine.get(table, {}).items():
            if key in changed:
                continue
            yield key, row
        for key, changed_row in changed.items():
            if changed_row is not None:
                yield key, changed_row

    def table_rows(self, table: str) -> Iterator[tuple[str, Row]]:
        """Committed rows of a table in the order a dict changed in place keeps: pristine order
        with changed rows where they were, then rows this sandbox added. For adapters whose tools
        work on plain data and whose outputs list rows in storage order."""
        self._read(table)
        changed = self._overlay.get(table, {})
        pristine = self._pristine.get(table, {})
        for key, row in pristine.items():
            current = changed.get(key, row) if key in changed else row
            if current is not None:
                yield key, current
        for key, added in changed.items():
            if key not in pristine and added is not None:
                yield key, added

    def exists(self, model: type[Record], key: str) -> bool:
        return self._raw(model.table, key) is not None

    def get(self, model: type[R], key: str) -> R:
        """A private copy of one row; raises `RecordNotFound`."""
        row = self._raw(model.table, key)
        if row is None:
            raise RecordNotFound(model.table, key)
        return model.model_validate(row)

    def find(self, model: type[R], **equal: Any) -> list[R]:
        """Rows whose top-level fields equal the given values, in the order `scan` yields them.
        The pristine rows come from the shared index; rows this sandbox wrote are checked too."""
        if not equal:
            return list(self.scan(model))
        table = model.table
        self._read(table)
        field, value = next(iter(equal.items()))
        changed: dict[str, Row | None] = {}
        changed.update(self._overlay.get(table, {}))
        if self._pending is not None:
            changed.update(self._pending.get(table, {}))
        rows = self._pristine.get(table, {})
        candidates = [rows[key] for key in self._index.keys_where(table, field, value) if key not in changed]
        candidates += [row for row in changed.values() if row is not None]
        return [
            model.model_validate(row)
            for row in candidates
            if all(row.get(name) == wanted for name, wanted in equal.items())
        ]

    def scan(self, model: type[R]) -> Iterator[R]:
        for _, row in self._raw_items(model.table):
            yield model.model_validate(row)

    def keys(self, model: type[Record]) -> list[str]:
        return [key for key, _ in self._raw_items(model.table)]

    # -- writes ----------------------------------------------------------------------------
    def _layer(self, table: str) -> dict[str, Row | None]:
        self._read(_EVERYTHING)
        self._writes += 1
        target = self._pending if self._pending is not None else self._overlay
        return target.setdefault(table, {})

    def put(self, record: Record) -> None:
        """Insert or replace a row (a copy of the record is stored)."""
        self._layer(record.table)[record.key] = record.model_dump(mode="json")

    def insert(self, record: Record) -> None:
        if self._raw(record.table, record.key) is not None:
            raise KeyError(f"{record.table} '{record.key}' already exists")
        self.put(record)

    def delete(self, model: type[Record], key: str) -> None:
        if self._raw(model.table, key) is None:
            raise RecordNotFound(model.table, key)
        self._layer(model.table)[key] = _DELETED

    def set_row(self, table: str, key: str, row: Row | None) -> None:
        """Write one raw row (`None` deletes it), for adapters whose tools work on plain data;
        the row must not be shared with anything else."""
        self._layer(table)[key] = row

    def new_id(self, sequence: str) -> str:
        """The next id of a sequence declared in the seed state; deterministic per trial."""
        row = self._raw(SEQUENCES_TABLE, sequence)
        if row is None:
            raise KeyError(f"id sequence '{sequence}' is not declared in {SEQUENCES_TABLE}")
        number = int(row["next"])
        self._layer(SEQUENCES_TABLE)[sequence] = {**row, "next": number + 1}
        return f"{row['prefix']}{number:0{int(row['width'])}d}"

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside land together or not at all."""
        if self._pending is not None:
            yield
            return
        self._pending = {}
        try:
            yield
        except BaseException:
            self._pending = None
            raise
        pending, self._pending = self._pending, None
        for table, rows in pending.items():
            self._overlay.setdefault(table, {}).update(rows)

    # -- comparison ------------------------------------------------------------------------
    @property
    def pristine(self) -> Snapshot:
        self._read(_EVERYTHING)
        return self._pristine

    def touched(self) -> dict[str, set[str]]:
        """Keys written (or deleted) since the pristine snapshot, per table."""
        self._read(_EVERYTHING)
        return {table: set(rows) for table, rows in self._overlay.items() if rows}

    def row(self, table: str, key: str) -> Row | None:
        """The committed raw row (read-only use), `None` if absent or deleted."""
        self._read(table)
        layer = self._overlay.get(table)
        if layer is not None and key in layer:
            return layer[key]
        return self._pristine.get(table, {}).get(key)

    def has_changes(self) -> bool:
        self._read(_EVERYTHING)
        return any(rows for table, rows in self._overlay.items() if table != SEQUENCES_TABLE)

    def fork(self) -> Database:
        """An independent copy of this state (same pristine, copied overlay): for replays and
        counterfactual branches."""
        self._read(_EVERYTHING)
        twin = Database(self._pristine, self.now, self._index)
        twin._overlay = copy.deepcopy(self._overlay)
        return twin

    @property
    def version(self) -> int:
        """Grows with every write (one rolled back included): a state whose version has not
        moved since a fork was taken still equals that fork."""
        return self._writes

    def adopt(self, twin: Database) -> None:
        """Take the state of `twin`, a fork of this sandbox that ran ahead of it (a tool call the
        labeler ran on a copy of the true state, which the trial then executes): the same
        state the call would have left here, without running it twice. `twin` must not be used
        afterwards (its rows become this sandbox's)."""
        if twin._pristine is not self._pristine or twin.now != self.now:
            raise ValueError("adopt: the twin is not a fork of this state")
        self._read(_EVERYTHING)
        self._overlay = twin._overlay
        twin._overlay = {}
        self._writes += 1

    def materialize(self) -> dict[str, dict[str, Row]]:
        """The full state as plain data (costly; for export and debugging, not grading)."""
        self._read(_EVERYTHING)
        tables = set(self._pristine) | set(self._overlay)
        return {table: dict(self._raw_items(table)) for table in sorted(tables)}
