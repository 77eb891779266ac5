"""Walking JSON values (tool arguments, rows, tool output) down to their leaves: what the labeler,
the critics, the reference agents and the packs compare, found one way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["is_name_key", "leaves", "listed_argument", "scalars"]


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


def is_name_key(key: str) -> bool:
    """Does a record's `key` hold a name of a record: `id`, `<x>_id`, `<x>_number` (an order id,
    a flight number, a phone number)?"""
    return key == "id" or key.endswith("_id") or key.endswith("_number")


def listed_argument(key: str) -> str:
    """The look-up argument the ids listed under `key` name: the singular of `key`, which is the
    argument itself when it is already a name key (`bill_ids` -> `bill_id`, `phone_numbers` ->
    `phone_number`), and `<singular>_id` otherwise (`orders` -> `order_id`, `reservations` ->
    `reservation_id`). One rule for every reader of records (the false-claims derivation, the
    reference agents, the benches): `bill_ids` is not `bill_id_id`."""
    singular = key.removesuffix("s")
    return singular if is_name_key(singular) else f"{singular}_id"
