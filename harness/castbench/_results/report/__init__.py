"""Reports: run summaries (JSON), tables on screen."""

from castbench._results.report.summary import DomainReport, RunSummary, summarize_run
from castbench._results.report.tables import print_summary, print_trial, reliability_table

__all__ = ["DomainReport", "RunSummary", "print_summary", "print_trial", "reliability_table", "summarize_run"]
