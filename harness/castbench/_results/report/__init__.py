"""Reports: run summaries (JSON), tables on screen.

The names below load on first use (PEP 562), so a command that imports one report module
(`runs list`'s `castbench._results.report.runs`) does not load the summary's grading and attribution, nor
the tables' (#59)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from castbench._results.report.summary import DomainReport, RunSummary, summarize_run
    from castbench._results.report.tables import print_summary, print_trial, reliability_table

__all__ = ["DomainReport", "RunSummary", "print_summary", "print_trial", "reliability_table", "summarize_run"]


def __getattr__(name: str) -> Any:
    if name in ("DomainReport", "RunSummary", "summarize_run"):
        from castbench._results.report import summary

        return getattr(summary, name)
    if name in ("print_summary", "print_trial", "reliability_table"):
        from castbench._results.report import tables

        return getattr(tables, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
