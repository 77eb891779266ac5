"""Checks on what the agent told the user: required outputs, and claims of success."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["claims_success", "missing_outputs", "normalize_output"]

_SUCCESS = re.compile(
    r"\b(has been|have been|successfully|is now|are now|done|completed|processed|cancelled|updated"
    r"|refunded)\b"
)
_REFUSAL = re.compile(r"\b(sorry|can't|cannot|unable|not able|not allowed|does not allow)\b")


def normalize_output(text: str) -> str:
    """Case, whitespace, thousands separators and currency signs do not matter."""
    text = text.lower().replace("$", "")
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    return " ".join(text.split())


def missing_outputs(required: Iterable[str], replies: Iterable[str]) -> list[str]:
    said = " ".join(normalize_output(reply) for reply in replies)
    return [output for output in required if normalize_output(output) not in said]


def claims_success(replies: list[str]) -> bool:
    """Whether the agent's last replies say the work was done (and do not refuse)."""
    tail = " ".join(replies[-2:]).lower()
    return bool(_SUCCESS.search(tail)) and not _REFUSAL.search(tail)
