"""A test critic that holds its verdict until the test lets it go (imported by path, as a team
loads its own critic: `tests.service.gated:GatedCritic`), to show what else runs meanwhile."""

from __future__ import annotations

import threading

from castbench._agents.views import Briefing, CriticView
from castbench._base.conversation import Verdict

__all__ = ["ENTERED", "RELEASE", "GatedCritic"]

ENTERED = threading.Event()
"""Set once the critic is verifying."""
RELEASE = threading.Event()
"""The critic answers once this is set (or after 60 s)."""


class GatedCritic:
    def __init__(self, briefing: Briefing) -> None:
        pass

    def verify(self, view: CriticView) -> Verdict:
        ENTERED.set()
        RELEASE.wait(60)
        return Verdict(verdict="valid")
