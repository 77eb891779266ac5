"""Training runs end to end: a tiny critic trained through the CAST stages on the labeler's
annotations of retail train tasks, served as the critic in `castbench eval` on held-out retail
test tasks and judged by castbench's own critic report, next to its untrained base and the
baselines on the same calls (issue #25). CI-sized; `bench/cast_learning.py` runs the same larger
and says whether the critic beats the lookups and a bag of words (issue #57: at the sizes a
2-core machine runs, it does not).

The base never writes a readable verdict, so it never flags: it carries no information (MCC 0,
the convention for a constant classifier; the report leaves it undefined). The trained critic
must answer readably, with both verdicts, intervals given. Its MCC at this size is not asserted
above 0: it was 0.10 [-0.06, 0.24] under the earlier labeler and -0.03 under the labeler of
issue #55, both intervals holding 0. About 4 minutes on 2 cores under a load average of ~20.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from castbench_cast.baselines import BASELINES
from castbench_cast.learning import beats, critic_learning
from castbench_cast.recipe import TinyModel, TrainStage


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One torch thread: on a busy 2-core machine two threads spin, 20x slower per step."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.train
def test_a_trained_critic_beats_its_base_on_held_out_tasks(tmp_path: Path, one_thread: None) -> None:
    train = TrainStage(
        model="tiny",
        tiny=TinyModel(hidden=64, layers=2, heads=4, vocab=2000, context=512),
        lr=6e-3,
        max_steps=80,
        batch=8,
        max_length=256,
        max_completion=48,
        keep="conversation",
        save_steps=100_000,
        device="cpu",
        # 80 steps are too few for the bench's settings (balanced data, verdict term 5): measured,
        # the verdict term crowded out the answer's format (every answer unreadable) and balanced
        # data alone gave MCC -0.01; the bench's 400 steps use them. CI size keeps neither.
        verdict_weight=0.0,
    )
    result = critic_learning(
        tmp_path / "out",
        train,
        train_tasks=100,
        test_tasks=40,
        max_tokens=48,
        target="verdict",
        balance=False,
        log=lambda _: None,
    )
    base, trained = result.base, result.trained
    assert result.held_out["split"] == "test" and result.train["examples"] > 500
    # the untrained base never writes a readable verdict: every one counts as a pass
    assert (
        base.parse_errors == base.unreadable == base.verdicts > 100
        and base.flag_rate == 0
        and base.mcc is None
    )
    # the trained critic has learned to answer: readable verdicts, both of them, on actions it
    # never saw; whether they carry more than a lookup or a bag of words is the bench's question
    # (at this size they do not: MCC -0.03 here, docs/training.md)
    assert trained.unreadable <= trained.verdicts // 20  # answers with no verdict (counted as passes)
    assert trained.flag_rate is not None and 0 < trained.flag_rate < 1
    assert trained.mcc is not None and trained.mcc_ci is not None  # a non-constant classifier
    assert trained.false_flag_rate_ci is not None and trained.detection_rate is not None
    # the baselines are judged on the trained critic's very calls, with the same intervals
    names = [row.name for row in result.baselines]
    assert names == ["trained critic", *BASELINES]
    assert all(row.calls == trained.verdicts for row in result.baselines)
    assert result.baselines[0].mcc == pytest.approx(trained.mcc)
    rules = next(row for row in result.baselines if row.name == "rules critic")
    assert rules.mcc is not None and rules.mcc > 0.8  # no training at all: the bar a critic is set
    assert result.beats_baselines == beats(result.baselines[0], result.baselines[1:3])
