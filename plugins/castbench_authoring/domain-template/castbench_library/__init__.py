"""A lending library, castbench's domain template: record types (`records.py`), tools (`tools.py`),
seed state (`data/state.json`), the agent's policy (`policy.md`), hand-written tasks (`tasks/`).
docs/domains.md walks through each file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from castbench.domain import Domain, DomainRules, Toolkit

from .records import Book, Loan, Member
from .tools import TOOLS

__all__ = ["domain"]

TOOLKIT = Toolkit(TOOLS)
domain = Domain(
    name="library",
    version="1-0",  # N-X: raise N whenever scores stop being comparable (tasks, data, tools, policy)
    root=Path(__file__).parent,
    records=[Member, Book, Loan],
    toolkit=TOOLKIT,
    now=datetime(2026, 6, 1, 10, 0, tzinfo=UTC),  # every tool reads this frozen clock
    rules=DomainRules(TOOLKIT),  # authentication from the tools' marks; no domain preconditions
    description="A lending library: find the member, then borrow, return or look up loans.",
)
