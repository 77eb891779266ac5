"""Lossless JSON text for trial records and the agent outputs inside them.

A trial record holds what its agents produced (tool arguments, replies, verdicts) and what tools
echoed back from it. All of that must survive the store, an export and a worker's wire exactly,
or an agent could leave its own trial unscored by producing something the store cannot write.
Pydantic's JSON writer, the fast path, loses or refuses a few values that Python strings and
floats can hold:

- a lone surrogate (`"\\ud800"`, which a model can write as a JSON escape) in a string: refused;
  in an object key: silently replaced by U+FFFD;
- NaN and the infinities: written as `null` (here: as the `NaN`/`Infinity` tokens Python's
  `json` reads, by the models' `ser_json_inf_nan="constants"`).

Those records take the exact path: Python's `json` with ASCII escapes (`\\ud800`, `\\u0000`), which
round-trips every Python string, and is plain ASCII text that SQLite and Postgres `text` store as
it is (a NUL character inside a Postgres `text` value is refused; its escape is not). Reading
tries Pydantic's parser first and falls back to Python's `json` for the escapes it refuses.

What still cannot be stored is not JSON data at all (an object, bytes, an integer of more than
4300 digits, which no JSON reader here accepts): `problem` says why, and the caller fails the
agent that produced it.
"""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["dumps", "loads", "problem"]

M = TypeVar("M", bound=BaseModel)

_REPLACEMENT = "\ufffd"


def dumps(model: BaseModel) -> str:
    """`model` as JSON text that `loads` reads back equal (NaN aside, which equals nothing).
    Raises `ValueError` (or `TypeError`) for a value that is not JSON data."""
    try:
        text = model.model_dump_json()
    except ValueError:  # PydanticSerializationError: a lone surrogate, or no JSON value
        return _exact(model)
    if _REPLACEMENT in text:  # maybe a surrogate key Pydantic replaced: write it exactly
        return _exact(model)
    return text


def _exact(model: BaseModel) -> str:
    return json.dumps(model.model_dump(mode="python"), ensure_ascii=True, separators=(",", ":"))


def loads(kind: type[M], text: str | bytes) -> M:
    """The model `dumps` wrote (or Pydantic's own `model_dump_json`, as records stored before)."""
    try:
        return kind.model_validate_json(text)
    except ValidationError as exc:
        if not any(error["type"] == "json_invalid" for error in exc.errors()):
            raise
    return kind.model_validate(json.loads(text))


def problem(model: BaseModel, max_chars: int | None = None) -> str | None:
    """Why `model` cannot be stored and read back, or None when it can; with `max_chars`, also
    when its JSON text is longer than that (an agent's 50 MB tool argument grew a store 45-fold
    and kept `runs show` busy for minutes)."""
    try:
        text = dumps(model)
        loads(type(model), text)
    except (ValueError, TypeError) as exc:  # PydanticSerializationError, ValidationError, json's
        return str(exc).splitlines()[0]
    if max_chars is not None and len(text) > max_chars:
        return f"{len(text) / 1e6:.1f} MB of JSON, over the {max_chars / 1e6:g} MB cap on one output"
    return None
