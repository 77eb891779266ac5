"""The published τ task sets as castbench domains: τ-Bench retail and airline, τ-Trait telecom and
telehealth, from the installed `tau-trait` package (`pip install 'castbench[tau]'`).

Registered as `tau-retail`, `tau-airline`, `tau-telecom`, `tau-telehealth`. Each is built on
first use from the package (data, wiki, tool classes, task lists): nothing of τ is copied into
castbench. See this package's README.md for what is derived, what is not covered and which
published tasks are broken.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from castbench_tau.source import DOMAINS

__all__ = ["airline", "retail", "telecom", "telehealth"]


@cache
def _domain(name: str) -> Any:
    from castbench_tau.domain import tau_domain

    return tau_domain(name)


def __getattr__(name: str) -> Any:
    """`castbench_tau.retail` etc. are built when an entry point (or a script) first asks."""
    if name in DOMAINS:
        return _domain(name)
    raise AttributeError(f"module 'castbench_tau' has no attribute '{name}'")
