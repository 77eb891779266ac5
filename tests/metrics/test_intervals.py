import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from castbench._records.metrics import (
    Difference,
    Interval,
    bootstrap_ci,
    mean_and_interval,
    paired_bootstrap_diff,
)

per_task = st.lists(st.integers(0, 8).map(lambda c: c / 8), min_size=1, max_size=60)


@settings(max_examples=60)
@given(per_task, st.integers(0, 2**32))
def test_interval_contains_point_and_is_seeded(values: list[float], seed: int) -> None:
    point = float(np.mean(values))
    low, high = bootstrap_ci(values, resamples=300, seed=seed)
    assert low - 1e-12 <= point <= high + 1e-12
    assert 0 <= low <= high <= 1
    assert bootstrap_ci(values, resamples=300, seed=seed) == (low, high)


def test_default_interval_is_deterministic_and_sensible() -> None:
    rng = np.random.default_rng(7)
    values = rng.binomial(8, 0.4, size=114) / 8
    first = bootstrap_ci(values)
    assert isinstance(first, Interval)
    assert first == bootstrap_ci(values, seed=0)
    assert first != bootstrap_ci(values, seed=1)
    # The standard error of a mean of 114 tasks is about sd/sqrt(114); a 95% interval spans ~4 of them.
    width = first.high - first.low
    assert width == pytest.approx(4 * values.std() / np.sqrt(values.size), rel=0.15)
    wider = bootstrap_ci(values, level=0.99)
    assert wider.low <= first.low and wider.high >= first.high


@pytest.mark.parametrize("as_array", [False, True], ids=["list", "array"])
@pytest.mark.parametrize("values", [[0.625], [0.3, 0.3, 0.3], [0.1] * 7, [0.0] * 20])
def test_equal_values_are_their_own_mean_and_interval(values: list[float], as_array: bool) -> None:
    """Every resample of equal values has their mean, which is that value exactly (numpy's mean
    of seven 0.1s is 0.09999999999999999), given as a list or as an array."""
    given = np.array(values) if as_array else values
    value = values[0]
    assert mean_and_interval(given) == (value, (value, value))
    assert bootstrap_ci(given) == (value, value)
    assert paired_bootstrap_diff(np.zeros(len(values)), given) == Difference(value, value, value)


@settings(max_examples=30)
@given(per_task, st.integers(0, 2**32))
def test_mean_and_interval_agree_with_numpy_and_bootstrap_ci(values: list[float], seed: int) -> None:
    point, interval = mean_and_interval(values, resamples=200, seed=seed)
    assert interval == bootstrap_ci(np.array(values), resamples=200, seed=seed)
    if len(set(values)) > 1:
        assert point == float(np.mean(values))


def test_equal_values_need_no_numpy(tmp_path: Path) -> None:
    """A summary whose tasks all agree (an oracle run's) is computed without importing numpy;
    one with differing tasks resamples them with it."""
    code = (
        "import sys\n"
        "from castbench._records.metrics import summarize\n"
        "summary = summarize({'a': [True, True], 'b': [True, True]})\n"
        "assert summary.ci95 == {1: (1.0, 1.0), 2: (1.0, 1.0)}, summary\n"
        "print('numpy' in sys.modules)\n"
        "summarize({'a': [True, False], 'b': [True, True]})\n"
        "print('numpy' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert result.stdout.split() == ["False", "True"], result.stderr


@pytest.mark.parametrize(
    ("values", "kwargs", "message"),
    [
        ([], {}, "non-empty"),
        ([[0.1, 0.2]], {}, "1-D"),
        ([0.1, float("nan")], {}, "non-finite"),
        ([0.1, 0.2], {"resamples": 0}, "resamples"),
        ([0.1, 0.2], {"level": 1.0}, "level"),
    ],
)
def test_bad_input_raises(values: list[float], kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bootstrap_ci(values, **kwargs)  # type: ignore[arg-type]


@given(per_task)
def test_paired_identical_runs_give_zero(values: list[float]) -> None:
    assert paired_bootstrap_diff(values, values, resamples=200) == Difference(0.0, 0.0, 0.0)


def test_paired_difference_is_tighter_than_independent_intervals() -> None:
    rng = np.random.default_rng(3)
    baseline = rng.binomial(8, rng.uniform(0, 1, size=50)) / 8
    candidate = np.clip(baseline + rng.choice([0, 0.125], size=50), 0, 1)
    diff = paired_bootstrap_diff(baseline, candidate, seed=5)
    assert diff.point == pytest.approx(candidate.mean() - baseline.mean())
    assert 0 < diff.low <= diff.point <= diff.high
    assert diff == paired_bootstrap_diff(baseline, candidate, seed=5)
    unpaired = bootstrap_ci(candidate).high - bootstrap_ci(candidate).low
    assert diff.high - diff.low < unpaired / 2


def test_paired_needs_same_tasks() -> None:
    with pytest.raises(ValueError, match="same tasks"):
        paired_bootstrap_diff([0.1, 0.2], [0.1])
