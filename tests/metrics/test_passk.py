from math import comb

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from castbench._records.metrics import pass_at_k, pass_at_k_tasks, pass_hat_k, pass_hat_k_tasks


@st.composite
def trials(draw: st.DrawFn) -> tuple[int, int]:
    n = draw(st.integers(1, 40))
    return n, draw(st.integers(0, n))


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (8, 5, 2, 10 / 28),
        (8, 5, 4, 5 / 70),
        (8, 5, 5, 1 / 56),
        (8, 5, 6, 0.0),
        (8, 8, 8, 1.0),
        (4, 1, 2, 0.0),
    ],
)
def test_pass_hat_k_exact(n: int, c: int, k: int, expected: float) -> None:
    assert pass_hat_k(n, c, k) == expected


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(8, 5, 4, 1.0), (8, 5, 2, 1 - 3 / 28), (4, 1, 2, 0.5), (8, 0, 8, 0.0), (8, 1, 8, 1.0)],
)
def test_pass_at_k_exact(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == expected


@given(trials())
def test_k1_is_success_share(nc: tuple[int, int]) -> None:
    n, c = nc
    assert pass_hat_k(n, c, 1) == pass_at_k(n, c, 1) == c / n


@given(trials())
def test_pass_hat_never_rises_and_pass_at_never_falls(nc: tuple[int, int]) -> None:
    n, c = nc
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(a >= b for a, b in zip(hat, hat[1:], strict=False))
    assert all(a <= b for a, b in zip(at, at[1:], strict=False))
    assert all(0 <= h <= a <= 1 for h, a in zip(hat, at, strict=True))


@given(trials(), st.data())
def test_pass_hat_is_share_of_all_success_subsets(nc: tuple[int, int], data: st.DataObject) -> None:
    n, c = nc
    k = data.draw(st.integers(1, n))
    assert pass_hat_k(n, c, k) == pytest.approx(comb(c, k) / comb(n, k))
    assert pass_at_k(n, c, k) == pytest.approx(1 - pass_hat_k(n, n - c, k))


@pytest.mark.parametrize(("n", "c", "k"), [(8, 9, 1), (8, -1, 1), (8, 5, 0), (8, 5, 9), (0, 0, 1)])
def test_bad_input_raises(n: int, c: int, k: int) -> None:
    for estimator in (pass_hat_k, pass_at_k):
        with pytest.raises(ValueError, match=r"must lie in"):
            estimator(n, c, k)


def test_task_vectors_match_scalars() -> None:
    n, c = [8, 8, 4, 10], [5, 0, 1, 10]
    np.testing.assert_array_equal(
        pass_hat_k_tasks(n, c, 2), [pass_hat_k(a, b, 2) for a, b in zip(n, c, strict=True)]
    )
    np.testing.assert_array_equal(
        pass_at_k_tasks(n, c, 2), [pass_at_k(a, b, 2) for a, b in zip(n, c, strict=True)]
    )
    with pytest.raises(ValueError, match="differ in length"):
        pass_hat_k_tasks([8, 8], [1], 1)
    with pytest.raises(ValueError, match="k=5"):
        pass_hat_k_tasks([8, 4], [1, 1], 5)
