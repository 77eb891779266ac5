"""Bootstrap uncertainty of a benchmark figure, the mean of a per-task value over tasks.

Tasks are the resampled unit: trials of one task are not independent draws of the benchmark,
and small sets (18 or 20 tasks in τ-Trait) make the figure noisy, so the interval says how far
another draw of tasks could move it. All resamples are drawn as one index matrix, so a seed
fixes the resampled tasks whatever the values are: the same seed gives the same interval, and
intervals of pass^1..pass^n computed with one seed share their resamples.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["DEFAULT_RESAMPLES", "Difference", "Interval", "bootstrap_ci", "paired_bootstrap_diff"]

DEFAULT_RESAMPLES = 2000


class Interval(NamedTuple):
    low: float
    high: float


class Difference(NamedTuple):
    """candidate - baseline over shared tasks, with its paired bootstrap interval."""

    point: float
    low: float
    high: float


def _as_vector(values: ArrayLike, name: str) -> NDArray[np.float64]:
    vector = np.asarray(values, dtype=np.float64)
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of per-task values, got shape {vector.shape}")
    if not np.all(np.isfinite(vector)):
        raise ValueError(f"{name} holds a non-finite per-task value")
    return vector


def _percentile_interval(values: NDArray[np.float64], resamples: int, seed: int, level: float) -> Interval:
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    point = float(values.mean())
    if np.ptp(values) == 0:
        # Every resample has the same mean; skip the draws so rounding cannot widen it.
        return Interval(point, point)
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, values.size, size=(resamples, values.size))
    means = values[indices].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(low), float(high))


def bootstrap_ci(
    values: ArrayLike, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = 0.95
) -> Interval:
    """Percentile bootstrap interval of the mean of per-task `values`, resampling tasks."""
    return _percentile_interval(_as_vector(values, "values"), resamples, seed, level)


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
    base = _as_vector(baseline, "baseline")
    cand = _as_vector(candidate, "candidate")
    if base.shape != cand.shape:
        raise ValueError(f"baseline and candidate must cover the same tasks ({base.size} vs {cand.size})")
    diffs = cand - base
    low, high = _percentile_interval(diffs, resamples, seed, level)
    return Difference(float(diffs.mean()), low, high)
