"""The bag-of-words baseline and the held-out family split (`castbench_cast.baselines`,
`castbench_cast.learning`): the classifier is the logistic regression it claims to be, it reads
the critic's input in three parts, and held-out families never reach training."""

from __future__ import annotations

import numpy as np
import pytest

from castbench.agents import ToolCallAction, UserTurn
from castbench_cast.baselines import _fit_logistic, bow_features, critic_input_parts
from castbench_cast.learning import held_out_families, split_tasks


def test_the_numpy_fit_reaches_the_balanced_l2_optimum() -> None:
    rng = np.random.default_rng(0)
    x = (rng.random((200, 12)) < 0.3).astype(float)
    y = ((x[:, 0] + x[:, 1] - x[:, 2] + 0.3 * rng.standard_normal(200)) > 0.5).astype(float)
    weights, bias = _fit_logistic(x, y, c=1.0)
    # the objective's gradient (scikit-learn's: balanced sample weights, unpenalised bias) is zero
    sample = np.where(y == 1, len(y) / (2 * y.sum()), len(y) / (2 * (len(y) - y.sum())))
    p = 1 / (1 + np.exp(-(x @ weights + bias)))
    assert np.abs(x.T @ (sample * (p - y)) + weights).max() < 1e-4
    assert abs(float((sample * (p - y)).sum())) < 1e-4
    assert weights[0] > 0 and weights[1] > 0 and weights[2] < 0
    again = _fit_logistic(x, y, c=1.0)
    assert np.array_equal(again[0], weights) and again[1] == bias  # deterministic


def test_the_critic_input_is_read_in_three_vocabularies() -> None:
    from castbench_cast.trajectories import Moment

    class _Proposal:
        action = ToolCallAction(name="get_order_details", arguments={"order_id": "#W1"})

    history = (UserTurn(text="Where is my order #W1?"),)
    moment = Moment(step=None, proposal=_Proposal(), history=history, critiques=())  # type: ignore[arg-type]
    parts = critic_input_parts("retail", moment)
    assert "Where is my order" in parts["transcript"] and "Where is my order" in parts["last"]
    assert "get_order_details" in parts["action"] and "get_order_details" not in parts["transcript"]
    features = bow_features(parts)
    assert "action:get" in features and "transcript:order" in features and "last:where" in features
    assert not any(feature.startswith("transcript:get_order") for feature in features)


def test_held_out_families_never_train_and_are_drawn_with_the_seed() -> None:
    out = held_out_families(3, seed=0)
    assert len(out) == 3 and out == held_out_families(3, seed=0)
    train = split_tasks("train", 10_000, out, held_out=False)
    from castbench.domain import load_domain

    families = {task.id: task.family for task in load_domain("retail").tasks("train")}
    assert train and not {families[task] for task in train} & set(out)
    test_out = split_tasks("test", 10_000, out, held_out=True)
    test_families = {task.id: task.family for task in load_domain("retail").tasks("test")}
    assert test_out and {test_families[task] for task in test_out} <= set(out)
    with pytest.raises(ValueError, match="some must train"):
        held_out_families(1000, seed=0)
