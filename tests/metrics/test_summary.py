import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from castbench._records.metrics import (
    ReliabilitySummary,
    TaskOutcome,
    overall,
    paired_difference,
    pass_hat_k,
    summarize,
    summarize_counts,
)


def results(n: int, c: int) -> list[bool]:
    return [True] * c + [False] * (n - c)


def test_uniform_run_exact_figures() -> None:
    summary = summarize({"b": results(8, 1), "a": results(8, 5)}, resamples=500)
    assert (summary.n_tasks, summary.n_trials, summary.trials_per_task, summary.uniform_trials) == (
        2,
        16,
        8,
        True,
    )
    assert list(summary.per_task) == ["a", "b"]
    assert summary.per_task["a"] == TaskOutcome(n=8, successes=5)
    assert sorted(summary.pass_hat) == sorted(summary.pass_at) == list(range(1, 9))
    assert summary.pass_hat[1] == summary.pass_at[1] == 6 / 16
    assert summary.pass_hat[2] == pytest.approx((10 / 28 + 0) / 2)
    assert summary.pass_hat[4] == pytest.approx((5 / 70 + 0) / 2)
    assert summary.pass_hat[6] == 0.0
    assert summary.pass_at[4] == pytest.approx((1 + 0.5) / 2)
    assert summary.pass_at[8] == 1.0
    assert summary.ci95[8] == (0.0, 0.0) and summary.ci95_at[8] == (1.0, 1.0)


def test_uneven_trials_use_min_k_and_own_n() -> None:
    summary = summarize({"a": results(4, 1), "b": results(2, 2)})
    assert (summary.trials_per_task, summary.uniform_trials, summary.n_trials) == (2, False, 6)
    assert sorted(summary.pass_hat) == [1, 2]
    assert summary.pass_hat == {1: (0.25 + 1) / 2, 2: (0 + 1) / 2}
    assert summary.pass_at == {1: (0.25 + 1) / 2, 2: (0.5 + 1) / 2}


def test_json_round_trip_keeps_int_keys() -> None:
    summary = summarize({"t1": results(3, 2), "t2": results(3, 1)}, resamples=100, seed=4)
    text = summary.model_dump_json()
    assert '"pass_hat":{"1":' in text
    assert ReliabilitySummary.model_validate_json(text) == summary


@st.composite
def runs(draw: st.DrawFn) -> dict[str, list[bool]]:
    n = draw(st.integers(1, 8))
    tasks = draw(st.integers(1, 25))
    return {f"t{i}": draw(st.lists(st.booleans(), min_size=n, max_size=n)) for i in range(tasks)}


@settings(max_examples=40)
@given(runs(), st.integers(0, 1000))
def test_summary_properties(trials: dict[str, list[bool]], seed: int) -> None:
    summary = summarize(trials, resamples=200, seed=seed)
    assert summary == summarize(dict(reversed(trials.items())), resamples=200, seed=seed)
    ks = range(1, summary.trials_per_task + 1)
    for k in ks:
        low, high = summary.ci95[k]
        assert low - 1e-12 <= summary.pass_hat[k] <= high + 1e-12
        low, high = summary.ci95_at[k]
        assert low - 1e-12 <= summary.pass_at[k] <= high + 1e-12
    for k in ks[1:]:
        # One seed means one set of resampled tasks for every k, so the bounds move with k too.
        assert summary.pass_hat[k] <= summary.pass_hat[k - 1] + 1e-12
        assert summary.pass_at[k] >= summary.pass_at[k - 1] - 1e-12
        assert all(a <= b + 1e-12 for a, b in zip(summary.ci95[k], summary.ci95[k - 1], strict=True))
        assert all(a >= b - 1e-12 for a, b in zip(summary.ci95_at[k], summary.ci95_at[k - 1], strict=True))


@pytest.mark.parametrize(
    ("trials", "message"),
    [({}, "no tasks"), ({"a": []}, "'a' has no scored trials"), ({"a": [True, 1]}, "'a' trial 1")],
)
def test_bad_outcomes_raise(trials: dict[str, list[bool]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        summarize(trials)


def test_task_outcome_validates() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        TaskOutcome(n=2, successes=3)


def test_overall_pools_tasks_not_domains() -> None:
    retail = summarize({str(i): results(4, 4) for i in range(6)})
    telecom = summarize({"0": results(4, 0), "1": results(4, 0)})
    pooled = overall({"retail": retail, "telecom": telecom})
    assert pooled.n_tasks == 8 and "telecom/0" in pooled.per_task
    assert pooled.pass_hat[4] == 6 / 8  # not (1 + 0) / 2
    assert pooled == summarize_counts(
        {
            **{f"retail/{i}": TaskOutcome(n=4, successes=4) for i in range(6)},
            "telecom/0": TaskOutcome(n=4, successes=0),
            "telecom/1": TaskOutcome(n=4, successes=0),
        }
    )


def test_paired_difference_over_shared_tasks() -> None:
    base = summarize({"a": results(4, 2), "b": results(4, 4), "only_base": results(4, 0)})
    cand = summarize({"a": results(4, 4), "b": results(4, 4), "only_cand": results(4, 4)})
    diff = paired_difference(base, cand, 2)
    assert diff.point == pytest.approx((1 - pass_hat_k(4, 2, 2)) / 2)
    assert diff.low <= diff.point <= diff.high
    assert paired_difference(base, base, 4) == (0.0, 0.0, 0.0)
    at = paired_difference(base, cand, 2, metric="pass_at")
    assert at.point == pytest.approx((1 - 5 / 6) / 2)
    with pytest.raises(ValueError, match="share no task"):
        paired_difference(summarize({"x": [True]}), summarize({"y": [True]}), 1)
