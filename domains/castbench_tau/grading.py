"""τ's rule for required outputs, verbatim: an output counts as said when, lowercased, it is a
substring of one of the agent's messages, lowercased with every comma removed (τ's
`calculate_reward`). Nothing else is normalised: not currency signs, not whitespace."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["tau_missing_outputs"]


def tau_missing_outputs(required: Iterable[str], replies: Iterable[str]) -> list[str]:
    said = [reply.lower().replace(",", "") for reply in replies]
    return [output for output in required if not any(output.lower() in text for text in said)]
