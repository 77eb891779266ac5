"""Versions of the records castbench keeps, and the migrations that read an older one.

A record outlives the castbench that wrote it: trial records and run configs sit in stores and
exports for years, summaries in files a CI gate reads. So each kept record carries the version of
its shape at its top level (`"version": N`, the first key, written by `RecordShape.dumps`; an
export's envelope says `format_version`). A record without one is version 1: the shape every
record had before versions were written. Reading a record runs the migrations from its version to
the current one, each a function from the raw dict of version N to that of version N+1, so the
models describe the current shape alone and every "stored before ..." rule lives in one place.

A record newer than this castbench is refused with one line naming the record and both versions
(`RecordVersionError`), never read with what it added silently dropped.

The version is written beside a record's fields, not among them: a run's id, a digest of its
config's fields (`RunConfig.config_hash`), does not change when the shape's version does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from castbench._base import lossless

__all__ = ["Migration", "RecordShape", "RecordVersionError"]

M = TypeVar("M", bound=BaseModel)

Migration = Callable[[dict[str, Any]], dict[str, Any]]
"""The raw dict of a record of version N -> the same record in the shape of version N + 1."""


class RecordVersionError(ValueError):
    """A record written by a newer castbench, or whose version is not a version; names the record."""


@dataclass(frozen=True)
class RecordShape:
    """One kind of kept record: its name in messages, and its migrations in order (the first
    takes version 1 to 2). Its current version is one more than the migrations it has."""

    record: str
    """What the record is, in messages: `trial record`, `run config`, `run summary`."""
    migrations: tuple[Migration, ...] = ()
    key: str = "version"
    """The top-level key holding the version."""

    @property
    def current(self) -> int:
        return len(self.migrations) + 1

    def upgrade(self, raw: dict[str, Any], where: str) -> dict[str, Any]:
        """`raw` (a record as read, with or without its version) in the current shape, without the
        version. `where` names the record in an error: `run r-1a2b3c`, a file."""
        data = dict(raw)
        version = self._version(data.pop(self.key, 1), where)
        for migrate in self.migrations[version - 1 :]:
            data = migrate(data)
        return data

    def _version(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RecordVersionError(f"{where}: {self.record} version {value!r} is not a version (1, 2, ...)")
        if value > self.current:
            raise RecordVersionError(
                f"{where}: {self.record} version {value} was written by a newer castbench; this one "
                f"reads versions 1 to {self.current} (upgrade castbench to read it)"
            )
        return value

    def stamp(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` (a record's fields) with the current version first."""
        return {self.key: self.current, **data}

    def dumps(self, model: BaseModel, indent: int | None = None) -> str:
        """`model` as lossless JSON text (`castbench._base.lossless`) with the current version first;
        with `indent`, Pydantic's indented JSON, for a file people read (`eval --output`)."""
        if indent is None:
            text, head, gap = lossless.dumps(model), f'{{"{self.key}":{self.current}', ","
        else:
            text = model.model_dump_json(indent=indent)
            head, gap = f'{{\n{" " * indent}"{self.key}": {self.current}', ",\n"
        if text == "{}":
            return head + ("}" if indent is None else "\n}")
        return head + gap + text[1:].lstrip("\n")

    def loads(self, kind: type[M], text: str | bytes, where: str) -> M:
        """The record `dumps` (or an older castbench) wrote, in the current shape. The common case,
        a record of the current version, is parsed by Pydantic straight from the text."""
        if isinstance(text, bytes):
            text = text.decode()
        head = f'{{"{self.key}":{self.current},'
        if text.startswith(head):
            return lossless.loads(kind, "{" + text[len(head) :])
        if self.current == 1 and f'"{self.key}"' not in text:  # unversioned: version 1
            return lossless.loads(kind, text)
        try:
            raw = json.loads(text)
        except ValueError:  # not JSON: Pydantic's error says where
            return kind.model_validate_json(text)
        return kind.model_validate(self.upgrade(raw, where) if isinstance(raw, dict) else raw)
