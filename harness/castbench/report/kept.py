"""Figures derived from the store alone, kept in it (`ResultsStore.cache`) so that a re-run does
not derive them again: a resumed complete run reads its summary back instead of loading and
re-reading every trial. Each is kept under a digest of everything it depends on, castbench's and
the domains' code included (`code_digest`): a changed input or a changed line is a new key, never
a stale figure."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import castbench
from castbench.domain import load_domain
from castbench.records.config import RunConfig
from castbench.store import ResultsStore

if TYPE_CHECKING:
    from castbench.report.summary import RunSummary

__all__ = ["code_digest", "kept_summary"]


@lru_cache(maxsize=8)
def code_digest(domains: tuple[str, ...]) -> str:
    """castbench's own source and that of each domain's package: the agents, the tools, the
    grading and the summary are code, and a changed line must not read back what it would change."""
    roots = {Path(castbench.__file__).parent}
    for name in domains:
        domain = load_domain(name)
        roots |= {domain.root, Path(inspect.getfile(type(domain))).parent}
    hasher = hashlib.sha256()
    for root in sorted(roots):
        for path in sorted(root.rglob("*.py")):
            hasher.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return hasher.hexdigest()


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
        from castbench.report.summary import RUN_SUMMARY, RunSummary  # it imports the floors, they this

        return RUN_SUMMARY.loads(RunSummary, kept, f"the kept summary of run {run_id}")
    from castbench.report.summary import RUN_SUMMARY

    summary = summarize()
    store.cache(key, "summary", RUN_SUMMARY.dumps(summary))
    return summary
