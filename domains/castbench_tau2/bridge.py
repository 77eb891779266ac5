"""τ²'s tools read and mutate one pydantic database object (`RetailDB`: `products`, `users`,
`orders`, each a dict of models); castbench's trials share one pristine state in a copy-on-write
`Database`. This is the bridge: a database object whose tables are `RowTable`s over the trial's
`Database`, so a call costs the rows it reaches, not the whole database.

- `table[key]` validates that row into τ²'s model on first access (the trial's own object: a
  tool may mutate it as it likes) and remembers it;
- a scan (`items()`, `values()`) yields every row in the pristine's order, as τ²'s dict would: a
  row this trial has reached or changed as its own object, every other row as one model per
  pristine row validated once and shared by every trial (`SharedRows`). τ²'s retail and airline
  tools only read what they scan (a look-up by name, a flight search) and change only rows they
  fetch by key, which are the trial's own; `tests/tau2` checks the shared models still equal the
  pristine rows after every tool has run;
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

__all__ = ["RowTable", "SharedRows", "bridged_db", "commit"]

_MISSING = object()


class SharedRows:
    """Pristine rows validated into τ²'s models once per domain, for scans (read-only use)."""

    def __init__(self, pristine: dict[str, dict[str, Any]], tables: dict[str, type]) -> None:
        self._pristine, self._tables = pristine, tables
        self._models: dict[str, dict[str, Any]] = {name: {} for name in tables}

    def get(self, table: str, key: str, row: Any) -> Any | None:
        """The shared model of a row, when `row` is still the pristine's own object."""
        if self._pristine.get(table, {}).get(key) is not row:
            return None
        models = self._models[table]
        model = models.get(key)
        if model is None:
            model = models[key] = self._tables[table].model_validate(row)  # type: ignore[attr-defined]
        return model

    def models(self, table: str) -> dict[str, Any]:
        return self._models[table]


class RowTable(dict):  # type: ignore[type-arg]
    """One table of τ²'s database object over the trial's `Database` (see the module docstring).
    The dict itself holds the rows reached so far; every read goes through the trial's state."""

    def __init__(self, db: Database, table: str, model: type, shared: SharedRows) -> None:
        super().__init__()
        self._db, self._table, self._model, self._shared = db, table, model, shared

    def _reach(self, key: Any) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        row = self._db.row(self._table, key) if isinstance(key, str) else None
        if row is None:
            return _MISSING
        value = self._model.model_validate(row)  # type: ignore[attr-defined]
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

    def _scan(self) -> list[tuple[str, Any]]:
        rows: list[tuple[str, Any]] = []
        for key, row in self._db.table_rows(self._table):
            if dict.__contains__(self, key):
                value = dict.__getitem__(self, key)
                if value is not _MISSING:
                    rows.append((key, value))
                continue
            shared = self._shared.get(self._table, key, row)
            rows.append((key, shared if shared is not None else self[key]))
        known = {key for key, _ in rows}
        rows += [
            (key, value) for key, value in dict.items(self) if key not in known and value is not _MISSING
        ]
        return rows

    def values(self) -> Any:
        return [value for _, value in self._scan()]

    def items(self) -> Any:
        return self._scan()

    def __delitem__(self, key: Any) -> None:
        self[key]
        dict.__setitem__(self, key, _MISSING)

    def reached(self) -> dict[str, Any]:
        return dict(dict.items(self))


def bridged_db(db_class: type, db: Database, tables: dict[str, type], shared: SharedRows) -> Any:
    """τ²'s database object for one call, its tables over `db`; `tables`: field name -> row model."""
    return db_class.model_construct(  # type: ignore[attr-defined]
        **{name: RowTable(db, name, model, shared) for name, model in tables.items()}
    )


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
