"""Walking JSON values (tool arguments, rows, tool output) down to their leaves: what the labeler,
the critics, the reference agents and the packs compare, found one way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["leaves", "scalars"]


def leaves(value: Any) -> Iterator[Any]:
    """Every value inside `value` that is not a dict or a list (None and booleans included),
    depth first; a scalar is its own only leaf."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def scalars(value: Any, *, numbers: bool = True) -> Iterator[str]:
    """Every string inside `value`, and every number as text if `numbers` (booleans are not
    numbers here), depth first."""
    for leaf in leaves(value):
        if isinstance(leaf, str):
            yield leaf
        elif numbers and isinstance(leaf, int | float) and not isinstance(leaf, bool):
            yield str(leaf)
