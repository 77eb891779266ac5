"""Field-level difference between a trial's final state and the expected one.

Both states share one pristine snapshot, so only rows that either of them wrote can differ:
the comparison costs O(rows touched), not O(database).

Values compare with their JSON types: `1`, `1.0` and `true` are three different values (Python's
`==` says they are equal). τ-Bench compares states by hashing their text, where they differ too,
and a domain whose tools store plain data can write either.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from castbench._domain.database import SEQUENCES_TABLE, Database
from castbench._domain.task import GradingSpec

__all__ = ["kept_initial", "FieldDiff", "same", "state_diff"]

_ABSENT = "<absent>"


class FieldDiff(BaseModel):
    table: str
    key: str
    field: str
    expected: Any
    got: Any


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        if not value and prefix:
            out[prefix] = {}
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list):
        if not value:
            out[prefix] = []
        for index, item in enumerate(value):
            _flatten(item, f"{prefix}[{index}]", out)
    else:
        out[prefix] = value


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same JSON type all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(value, b[key]) for key, value in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    return bool(a == b)


def _normal(text: Any) -> Any:
    return " ".join(text.lower().split()) if isinstance(text, str) else text


def _top_field(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]


def state_diff(final: Database, expected: Database, grading: GradingSpec | None = None) -> list[FieldDiff]:
    grading = grading or GradingSpec()
    normalized = set(grading.normalize_text)
    ignored = set(grading.ignore_fields)
    diffs: list[FieldDiff] = []
    final_touched, expected_touched = final.touched(), expected.touched()
    for table in sorted((set(final_touched) | set(expected_touched)) - {SEQUENCES_TABLE}):
        for key in sorted(final_touched.get(table, set()) | expected_touched.get(table, set())):
            want, got = expected.row(table, key), final.row(table, key)
            if same(want, got):
                continue
            if want is None or got is None:
                diffs.append(
                    FieldDiff(
                        table=table,
                        key=key,
                        field="*",
                        expected=_ABSENT if want is None else "<present>",
                        got=_ABSENT if got is None else "<present>",
                    )
                )
                continue
            diffs += _row_diff(table, key, want, got, ignored, normalized)
    return diffs


def _row_diff(
    table: str, key: str, want: Any, got: Any, ignored: set[str], normalized: set[str]
) -> list[FieldDiff]:
    """The differing leaves of one row, by path. Only the top-level fields that differ are
    flattened: a row often holds long lists (an order's items, a payment history) of which one
    field changed."""
    flat_want: dict[str, Any] = {}
    flat_got: dict[str, Any] = {}
    for name in want.keys() | got.keys():
        column = f"{table}.{name}"
        if column in ignored or same(want.get(name, _ABSENT), got.get(name, _ABSENT)):
            continue
        if name in want:
            _flatten({name: want[name]}, "", flat_want)
        if name in got:
            _flatten({name: got[name]}, "", flat_got)
    diffs = []
    for path in sorted(flat_want.keys() | flat_got.keys()):
        a, b = flat_want.get(path, _ABSENT), flat_got.get(path, _ABSENT)
        if f"{table}.{_top_field(path)}" in normalized:
            a, b = _normal(a), _normal(b)
        if not same(a, b):
            diffs.append(FieldDiff(table=table, key=key, field=path, expected=a, got=b))
    return diffs


def kept_initial(diff: list[FieldDiff], initial: Database) -> bool:
    """Does every field of `diff` (a final state against the expected one) still hold its value
    in `initial`, the trial's starting state? Then the agent skipped a write (what it should
    have changed was never touched): a missing state change, not a wrong update."""
    flat: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in diff:
        row = initial.row(entry.table, entry.key)
        if entry.field == "*":
            if (row is None) != (entry.got == _ABSENT):
                return False
            continue
        if row is None:
            return False
        if (entry.table, entry.key) not in flat:
            flat[(entry.table, entry.key)] = {}
            _flatten(row, "", flat[(entry.table, entry.key)])
        was = flat[(entry.table, entry.key)].get(entry.field, _ABSENT)
        if not (same(was, entry.got) or _normal(was) == entry.got):
            return False
    return bool(diff)
