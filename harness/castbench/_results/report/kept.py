"""Figures derived from the store alone, kept in it (`ResultsStore.cache`) so that a re-run does
not derive them again: a resumed complete run reads its summary back instead of loading and
re-reading every trial. Each is kept under a digest of everything it depends on, castbench's and
the domains' code included (`code_digest`): a changed input or a changed line is a new key, never
a stale figure."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._results.report.digest import code_digest
from castbench._results.report.summary import RUN_SUMMARY, RunSummary

# `code_digest` lives in `castbench._results.report.digest` (the floors key on it too); named here as before
__all__ = ["code_digest", "kept_summary"]


def kept_summary(
    store: ResultsStore, run_id: str, config: RunConfig, status: str, summarize: Callable[[], RunSummary]
) -> RunSummary:
    """The run's summary as `summarize` derives it, read back while the run's trials, status and
    config are those it was derived from (any trial stored since is a new key)."""
    trials = store.trials_version(run_id)
    parts = [run_id, status, config.config_hash(), repr(trials), code_digest(tuple(config.domains))]
    key = "summary:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()
    kept = store.cached(key)
    if kept is not None:
        return RUN_SUMMARY.loads(RunSummary, kept, f"the kept summary of run {run_id}")
    summary = summarize()
    store.cache(key, "summary", RUN_SUMMARY.dumps(summary))
    return summary
