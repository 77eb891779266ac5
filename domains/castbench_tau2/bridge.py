"""τ²'s tools read and mutate one pydantic database object (`RetailDB`: `products`, `users`,
`orders`, each a dict of models); castbench's trials share one pristine state in a copy-on-write
`Database`. This is the bridge: a database object whose tables are `RowTable`s over the trial's
`Database`, so a call costs the rows it reaches, not the whole database.

- `table[key]` validates that row into τ²'s model on first access (the trial's own object: a
  tool may mutate it as it likes) and remembers it;
- a scan (`items()`, `values()`) reaches every row, in the pristine's order, as τ²'s dict would;
- `table[key] = model` (a new reservation) is remembered likewise;
- after the call, `commit` writes back every reached row whose JSON dump changed, as JSON.

What a tool changed before it raised stays changed, as in τ² (it does not roll back either).
Rows are stored as `model_dump(mode="json")`, so the pristine state is the package database
dumped the same way, and two states are equal exactly when τ²'s `get_db_hash` of them is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from castbench.domain import Database

__all__ = ["RowTable", "bridged_db", "commit"]

_MISSING = object()


class RowTable(dict):  # type: ignore[type-arg]
    """One table of τ²'s database object over the trial's `Database` (see the module docstring).
    The dict itself holds the rows reached so far; every read goes through the trial's state."""

    def __init__(self, db: Database, table: str, model: type) -> None:
        super().__init__()
        self._db, self._table, self._model = db, table, model

    def _reach(self, key: Any) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        row = self._db.row(self._table, key) if isinstance(key, str) else None
        if row is None:
            return _MISSING
        value = self._model.model_validate(row)
        dict.__setitem__(self, key, value)
        return value

    def __getitem__(self, key: Any) -> Any:
        value = self._reach(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        value = self._reach(key)
        return default if value is _MISSING else value

    def __contains__(self, key: object) -> bool:
        return self._reach(key) is not _MISSING

    def _keys(self) -> list[str]:
        keys = [key for key, _ in self._db.table_rows(self._table)]
        known = set(keys)
        return keys + [key for key in dict.keys(self) if key not in known]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def keys(self) -> Any:
        return self._keys()

    def values(self) -> Any:
        return [self[key] for key in self._keys()]

    def items(self) -> Any:
        return [(key, self[key]) for key in self._keys()]

    def __delitem__(self, key: Any) -> None:
        self[key]
        dict.__setitem__(self, key, _MISSING)

    def reached(self) -> dict[str, Any]:
        return dict(dict.items(self))


def bridged_db(db_class: type, db: Database, tables: dict[str, type]) -> Any:
    """τ²'s database object for one call, its tables over `db`; `tables`: field name -> row model."""
    return db_class.model_construct(**{name: RowTable(db, name, model) for name, model in tables.items()})


def commit(view: Any, db: Database, tables: dict[str, type]) -> None:
    """Write back the rows the call changed (as their JSON dump), and removals."""
    with db.transaction():
        for name in tables:
            table = getattr(view, name)
            for key, value in table.reached().items():
                if value is _MISSING:
                    db.set_row(name, key, None)
                    continue
                row = value.model_dump(mode="json")
                if row != db.row(name, key):
                    db.set_row(name, key, row)
