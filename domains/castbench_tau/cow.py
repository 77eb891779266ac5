"""τ's tools mutate one plain dict `data`; castbench's trials share one pristine state. This is
the bridge: a `data` view over a trial's copy-on-write `Database` that τ's code cannot tell from
its dict, at the cost of the rows it touches rather than the whole database.

- `data[table]` is a `TableView`; `table[key]` is the row as a `CowDict`: a *shallow* copy made
  on first access (fractions of a microsecond), whose nested dicts are copied the same way when
  they are reached and whose nested lists are copied with their items. Nothing handed to a tool
  is ever an object of the pristine state, so a tool can mutate whatever it reads.
- Every mutating method marks the row dirty; after the call only dirty rows are written back,
  as plain deep copies, so the sandbox holds no proxies and shares nothing with the pristine.
- Scans (`table.items()`) keep τ's dict order (see `Database.table_rows`), so listing tools
  answer in the same order as under τ.

As in τ, what a tool changed before it raised stays changed: τ does not roll back either.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from castbench.domain import Database

__all__ = ["TauData", "plain"]


Mark = tuple[set[str], str]
"""(the table's set of dirty keys, this row's key): shared by every proxy inside one row, so a
write anywhere in the row marks the row."""


def _proxy(value: Any, mark: Mark) -> Any:
    if type(value) is dict:
        child = CowDict(value)  # dict's own C-level copy: no Python frame per row of a scan
        child._mark, child._src = mark, value
        return child
    if type(value) is list:
        return CowList(value, mark)
    return value


def plain(value: Any) -> Any:
    """A deep copy made of plain dicts and lists (what is stored in the sandbox)."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in dict.items(value)}
    if isinstance(value, list):
        return [plain(item) for item in list.__iter__(value)]
    return value


class CowDict(dict):  # type: ignore[type-arg]
    """A row (or a dict inside one), a shallow copy of its source. A nested dict or list that is
    still the source's own object is copied the same way when first reached; a value the tool
    put there itself is handed back as it is (so the tool's own aliases keep working)."""

    __slots__ = ("_mark", "_src")
    _mark: Mark
    _src: dict[str, Any]

    def _child(self, key: Any, value: Any) -> Any:
        if (type(value) is dict or type(value) is list) and value is self._src.get(key):
            value = _proxy(value, self._mark)
            dict.__setitem__(self, key, value)
        return value

    def _dirty(self) -> None:
        self._mark[0].add(self._mark[1])

    def __getitem__(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if type(value) is dict or type(value) is list:  # inlined `_child`: reads are the hot path
            return self._child(key, value)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if dict.__contains__(self, key) else default

    def __iter__(self) -> Iterator[Any]:  # an own __iter__ makes dict(x) and {**x} go through []
        return dict.__iter__(self)

    def items(self) -> Any:
        return [(key, self[key]) for key in dict.__iter__(self)]

    def values(self) -> Any:
        return [self[key] for key in dict.__iter__(self)]

    def copy(self) -> dict[str, Any]:
        return plain(self)  # type: ignore[no-any-return]

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return plain(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> Any:
        return (dict, (plain(self),))

    # -- writes --------------------------------------------------------------------------
    def __setitem__(self, key: Any, value: Any) -> None:
        self._dirty()
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self._dirty()
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        self._dirty()
        if dict.__contains__(self, key):
            value = self[key]
            dict.__delitem__(self, key)
            return value
        return dict.pop(self, key, *default)

    def popitem(self) -> Any:
        self._dirty()
        key = next(reversed(list(dict.__iter__(self))))
        return key, self.pop(key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self[key]
        self[key] = default
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        self._dirty()
        dict.clear(self)

    def __ior__(self, other: Any) -> CowDict:  # type: ignore[misc]  # in place, as dict/list's
        self.update(other)
        return self


class CowList(list):  # type: ignore[type-arg]
    """A list inside a row, copied with its items (lists in τ's rows are short)."""

    __slots__ = ("_mark",)

    def __init__(self, source: list[Any], mark: Mark) -> None:
        list.__init__(self, [_proxy(item, mark) for item in source])
        self._mark = mark

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return plain(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> Any:
        return (list, (plain(self),))

    def copy(self) -> list[Any]:
        return plain(self)  # type: ignore[no-any-return]

    def _dirty(self) -> None:
        self._mark[0].add(self._mark[1])

    def __setitem__(self, index: Any, value: Any) -> None:
        self._dirty()
        list.__setitem__(self, index, value)

    def __delitem__(self, index: Any) -> None:
        self._dirty()
        list.__delitem__(self, index)

    def __iadd__(self, other: Any) -> CowList:  # type: ignore[misc]  # in place, as dict/list's
        self._dirty()
        list.extend(self, other)
        return self

    def __imul__(self, count: Any) -> CowList:  # type: ignore[misc]  # in place, as dict/list's
        self._dirty()
        list.__imul__(self, count)
        return self

    def append(self, value: Any) -> None:
        self._dirty()
        list.append(self, value)

    def extend(self, values: Any) -> None:
        self._dirty()
        list.extend(self, values)

    def insert(self, index: Any, value: Any) -> None:
        self._dirty()
        list.insert(self, index, value)

    def remove(self, value: Any) -> None:
        self._dirty()
        list.remove(self, value)

    def pop(self, *index: Any) -> Any:
        self._dirty()
        return list.pop(self, *index)

    def clear(self) -> None:
        self._dirty()
        list.clear(self)

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._dirty()
        list.sort(self, *args, **kwargs)

    def reverse(self) -> None:
        self._dirty()
        list.reverse(self)


_MISSING = object()


class TableView(dict):  # type: ignore[type-arg]
    """One table of the trial's state as τ's `data[table]` dict. It holds nothing itself (its
    own dict storage stays empty): rows come from the sandbox, proxied on first access."""

    def __init__(self, db: Database, name: str) -> None:
        dict.__init__(self)
        self._db = db
        self._name = name
        self._rows: dict[str, Any] = {}
        """key -> the proxy (or the value a tool assigned) handed out during this call."""
        self._dirty: set[str] = set()
        """Keys of rows changed in place, or assigned, during this call."""
        self._deleted: set[str] = set()

    def _lookup(self, key: Any) -> Any:
        if key in self._rows:
            return self._rows[key]
        if key in self._deleted or not isinstance(key, str):
            return _MISSING
        raw = self._db.row(self._name, key)
        if raw is None:
            return _MISSING
        proxy = self._rows[key] = _proxy(raw, (self._dirty, key))
        return proxy

    def __getitem__(self, key: Any) -> Any:
        value = self._lookup(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return self._lookup(key) is not _MISSING

    def get(self, key: Any, default: Any = None) -> Any:
        value = self._lookup(key)
        return default if value is _MISSING else value

    def _keys(self) -> list[str]:
        keys = [key for key, _ in self._db.table_rows(self._name) if key not in self._deleted]
        stored = set(keys)
        return keys + [key for key in self._rows if key not in stored and key not in self._deleted]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def keys(self) -> Any:
        return self._keys()

    def items(self) -> Any:
        if self._deleted or any(key not in self._rows for key in self._dirty):
            return [(key, self[key]) for key in self._keys()]
        return self._scan()

    def _scan(self) -> Iterator[tuple[str, Any]]:
        """The fast path of every scan, lazily: a look-up that stops at its match proxies only
        the rows before it."""
        rows, dirty = self._rows, self._dirty
        seen = set()
        for key, raw in self._db.table_rows(self._name):
            proxy = rows.get(key, _MISSING)
            if proxy is _MISSING:
                proxy = rows[key] = _proxy(raw, (dirty, key))
            seen.add(key)
            yield key, proxy
        for key, value in list(rows.items()):
            if key not in seen:
                yield key, value

    def values(self) -> Any:
        return [value for _, value in self.items()]

    def __len__(self) -> int:
        return len(self._keys())

    def __bool__(self) -> bool:
        return bool(self._keys())

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def __eq__(self, other: object) -> bool:
        return dict(self.items()) == other

    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> dict[str, Any]:
        return {key: plain(value) for key, value in self.items()}

    def __setitem__(self, key: Any, value: Any) -> None:
        self._rows[key] = value
        self._dirty.add(key)
        self._deleted.discard(key)

    def __delitem__(self, key: Any) -> None:
        if key not in self:
            raise KeyError(key)
        self._rows.pop(key, None)
        self._dirty.discard(key)
        self._deleted.add(key)

    def pop(self, key: Any, *default: Any) -> Any:
        value = self._lookup(key)
        if value is _MISSING:
            if default:
                return default[0]
            raise KeyError(key)
        del self[key]
        return value

    def setdefault(self, key: Any, default: Any = None) -> Any:
        value = self._lookup(key)
        if value is _MISSING:
            self[key] = default
            return default
        return value

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def commit(self) -> None:
        """Write what this call changed into the sandbox (plain copies), then forget the proxies.
        A table written counts as read (`Database.read_through`), even by a tool that only added
        rows to it: an answer that wrote is never shared."""
        if self._deleted or self._dirty:
            self._db.row(self._name, "")
        for key in self._deleted:
            if self._db.row(self._name, key) is not None:
                self._db.set_row(self._name, key, None)
        for key in self._dirty:
            if key in self._rows:
                self._db.set_row(self._name, str(key), plain(self._rows[key]))
        self._rows.clear()
        self._dirty.clear()
        self._deleted.clear()


class TauData(dict):  # type: ignore[type-arg]
    """τ's `data` for one tool call: table name -> `TableView` over the trial's sandbox. `tables`:
    the state's table names (default: the pristine state's, which `Database` counts as reading
    every table)."""

    def __init__(self, db: Database, tables: Iterable[str] | None = None) -> None:
        dict.__init__(self)
        self._views = {name: TableView(db, name) for name in (db.pristine if tables is None else tables)}

    def __getitem__(self, key: Any) -> Any:
        return self._views[key]

    def __contains__(self, key: object) -> bool:
        return key in self._views

    def get(self, key: Any, default: Any = None) -> Any:
        return self._views.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._views)

    def keys(self) -> Any:
        return self._views.keys()

    def items(self) -> Any:
        return self._views.items()

    def values(self) -> Any:
        return self._views.values()

    def __len__(self) -> int:
        return len(self._views)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError(
            f"a τ tool tried to replace the whole table '{key}', which the adapter does not allow"
        )

    def commit(self) -> None:
        for view in self._views.values():
            view.commit()


# τ's tools report exceptions as text (`Error: unhashable type: 'dict'`): the proxies answer to
# the names of the types they stand for, so a tool's error reads as it does under τ.
for _cls, _name in ((CowDict, "dict"), (CowList, "list"), (TableView, "dict"), (TauData, "dict")):
    _cls.__name__ = _cls.__qualname__ = _name
