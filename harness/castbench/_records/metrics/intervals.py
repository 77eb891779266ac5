"""Bootstrap uncertainty of a benchmark figure, the mean of a per-task value over tasks.

Tasks are the resampled unit: trials of one task are not independent draws of the benchmark,
and small sets (18 or 20 tasks in τ-Trait) make the figure noisy, so the interval says how far
another draw of tasks could move it. All resamples are drawn as one index matrix, so a seed
fixes the resampled tasks whatever the values are: the same seed gives the same interval, and
intervals of pass^1..pass^n computed with one seed share their resamples.

Values that are all the same (one task; every task passed, or every one failed) are their own
mean, and every resample has that mean: the interval is that point and nothing is drawn. Given
as a list, such values do not even import numpy (about 0.15 s), so a run whose summary is of
that kind, an oracle run for one, never loads it.
"""

from __future__ import annotations

from math import isfinite
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "DEFAULT_RESAMPLES",
    "Difference",
    "Interval",
    "bootstrap_ci",
    "mean_and_interval",
    "paired_bootstrap_diff",
]

DEFAULT_RESAMPLES = 2000


class Interval(NamedTuple):
    low: float
    high: float


class Difference(NamedTuple):
    """candidate - baseline over shared tasks, with its paired bootstrap interval."""

    point: float
    low: float
    high: float


def _check_options(resamples: int, level: float) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")


def _shared_value(values: ArrayLike) -> float | None:
    """The finite number every entry of a non-empty list or tuple equals; None for anything else
    (numpy checks and resamples that)."""
    if not isinstance(values, list | tuple) or not values:
        return None
    first = values[0]
    if not isinstance(first, int | float) or not isfinite(first):
        return None
    return float(first) if all(isinstance(v, int | float) and v == first for v in values) else None


def _as_vector(values: ArrayLike, name: str) -> NDArray[np.float64]:
    import numpy as np  # only for values that differ: see the module's docstring

    vector = np.asarray(values, dtype=np.float64)
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of per-task values, got shape {vector.shape}")
    if not np.all(np.isfinite(vector)):
        raise ValueError(f"{name} holds a non-finite per-task value")
    return vector


def _percentile(
    values: NDArray[np.float64], resamples: int, seed: int, level: float
) -> tuple[float, Interval]:
    """The mean of `values` and its percentile bootstrap interval."""
    import numpy as np

    if np.ptp(values) == 0:
        point = float(values[0])
        return point, Interval(point, point)
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, values.size, size=(resamples, values.size))
    means = values[indices].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(values.mean()), Interval(float(low), float(high))


def mean_and_interval(
    values: ArrayLike, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = 0.95
) -> tuple[float, Interval]:
    """The mean of per-task `values` and its percentile bootstrap interval, resampling tasks."""
    _check_options(resamples, level)
    shared = _shared_value(values)
    if shared is not None:
        return shared, Interval(shared, shared)
    return _percentile(_as_vector(values, "values"), resamples, seed, level)


def bootstrap_ci(
    values: ArrayLike, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = 0.95
) -> Interval:
    """Percentile bootstrap interval of the mean of per-task `values`, resampling tasks."""
    return mean_and_interval(values, resamples=resamples, seed=seed, level=level)[1]


def paired_bootstrap_diff(
    baseline: ArrayLike,
    candidate: ArrayLike,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> Difference:
    """Difference of two runs' figures over the same tasks, aligned by position.

    Both runs are resampled with the same task indices, so task difficulty, shared by both,
    cancels out and the interval is much tighter than two independent ones would suggest.
    The mean of per-task differences equals the difference of means, so resampling the
    differences is that paired bootstrap.
    """
    _check_options(resamples, level)
    base = _as_vector(baseline, "baseline")
    cand = _as_vector(candidate, "candidate")
    if base.shape != cand.shape:
        raise ValueError(f"baseline and candidate must cover the same tasks ({base.size} vs {cand.size})")
    point, (low, high) = _percentile(cand - base, resamples, seed, level)
    return Difference(point, low, high)
