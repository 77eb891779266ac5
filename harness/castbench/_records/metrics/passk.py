"""pass^k and pass@k for one task with n trials of which c succeeded.

pass^k (τ-Bench) is the chance that k trials drawn without replacement from the n all succeed:
C(c,k)/C(n,k). pass@k is the chance that at least one does: 1 - C(n-c,k)/C(n,k). Both are
unbiased estimates for k fresh trials, which (c/n)^k and 1 - (1-c/n)^k are not. The counts are
combined as exact integers and divided once (pass@k as (C(n,k) - C(n-c,k)) / C(n,k)), so each
figure is the correctly rounded float: pass^1 and pass@1 both equal c/n exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from math import comb
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

__all__ = ["ALL_KS_UP_TO", "pass_at_k", "pass_at_k_tasks", "pass_hat_k", "pass_hat_k_tasks", "reported_ks"]

ALL_KS_UP_TO = 16
"""Every k up to this is reported; past it, powers of two and the largest k only."""


def reported_ks(k_max: int) -> list[int]:
    """The k for which summaries, tables and comparisons give pass^k and pass@k: every k up to
    `ALL_KS_UP_TO`, then 32, 64, ... and `k_max` itself. A bounded set (about 26 for 1000 trials
    per task): every k of a run with a million trials kept `runs show` at 100% CPU for ever."""
    ks = list(range(1, min(k_max, ALL_KS_UP_TO) + 1))
    power = ALL_KS_UP_TO * 2
    while power < k_max:
        ks.append(power)
        power *= 2
    if k_max > ALL_KS_UP_TO:
        ks.append(k_max)
    return ks


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must lie in 0..n (n={n} trials)")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must lie in 1..n (n={n} trials, c={c} successes)")


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that k of the n trials, drawn without replacement, all succeed."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k of the n trials, drawn without replacement, succeeds."""
    _check(n, c, k)
    total = comb(n, k)
    return (total - comb(n - c, k)) / total


def _per_task(
    estimator: Callable[[int, int, int], float], n: ArrayLike, c: ArrayLike, k: int
) -> NDArray[np.float64]:
    import numpy as np  # the per-task vectors only: a run's summary and floors use the scalars above

    ns = np.asarray(n, dtype=np.int64).ravel()
    cs = np.asarray(c, dtype=np.int64).ravel()
    if ns.shape != cs.shape:
        raise ValueError(f"n and c differ in length ({ns.size} tasks vs {cs.size})")
    return np.fromiter(
        (estimator(int(a), int(b), k) for a, b in zip(ns, cs, strict=True)), np.float64, ns.size
    )


def pass_hat_k_tasks(n: ArrayLike, c: ArrayLike, k: int) -> NDArray[np.float64]:
    """pass^k of each task from arrays of trial and success counts.

    Computed once per task with exact integers; a bootstrap then resamples this vector.
    """
    return _per_task(pass_hat_k, n, c, k)


def pass_at_k_tasks(n: ArrayLike, c: ArrayLike, k: int) -> NDArray[np.float64]:
    """pass@k of each task from arrays of trial and success counts."""
    return _per_task(pass_at_k, n, c, k)
