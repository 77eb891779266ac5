"""The digest of the code behind a kept figure (`code_digest`): castbench's own source and that of
each domain's package.

A module of its own, below everything that keeps figures: the reference floors key their runs on it
(`castbench._run.floors`), and so do the counterfactuals and the kept summaries
(`castbench._results.report.kept`), which read the summary model that holds the floors.
"""

from __future__ import annotations

import hashlib
import inspect
from functools import lru_cache
from pathlib import Path

from castbench._base.version import PACKAGE_ROOT
from castbench._domain.keeping import source_digest
from castbench._domain.registry import load_domain

__all__ = ["code_digest"]


@lru_cache(maxsize=8)
def code_digest(domains: tuple[str, ...]) -> str:
    """castbench's own source and that of each domain's package: the agents, the tools, the
    grading and the summary are code, and a changed line must not read back what it would change."""
    roots = {PACKAGE_ROOT}
    for name in domains:
        domain = load_domain(name)
        roots |= {domain.root, Path(inspect.getfile(type(domain))).parent}
    return hashlib.sha256("\0".join(source_digest(root) for root in sorted(roots)).encode()).hexdigest()
