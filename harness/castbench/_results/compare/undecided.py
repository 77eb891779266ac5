"""What an UNDECIDED gate exits with, apart from the gate (`castbench gate --help` reads it
without loading the runs' machinery)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["UndecidedPolicy"]


class UndecidedPolicy(StrEnum):
    """What an UNDECIDED result exits with: 3 (its own code), 1 (as a failure) or 0 (as a pass)."""

    UNDECIDED = "undecided"
    FAIL = "fail"
    PASS = "pass"
