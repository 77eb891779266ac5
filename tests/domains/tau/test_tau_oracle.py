"""Every castbench capability on the packs: the noisy policy's pass^k falls with k, a critic runs in
the loop (the oracle's 1.0 on every task that is not broken: `test_tau_upper_bound.py`)."""

from __future__ import annotations

from pathlib import Path

from castbench._run.api import evaluate
from castbench_tau.domain import TauDomain
from tests.support import sqlite_url


def test_noisy_policy_pass_k_falls_with_k(pack: TauDomain, tmp_path: Path) -> None:
    split = "test" if len(pack.tasks("test")) >= 5 else "dev"
    tasks = [task.id for task in pack.tasks(split)][:12]
    result = evaluate(
        domains=pack.name,
        split=split,
        tasks=tasks,
        policy="scripted:noisy?p=0.5",
        trials=6,
        seed=3,
        db=sqlite_url(tmp_path / "noisy.db"),
    )
    curve = result.summary.domains[pack.name].pass_hat
    assert curve[1] > curve[4] and curve[1] < 1.0
    assert all(curve[k] >= curve[k + 1] for k in range(1, 6))


def test_a_critic_in_the_loop_is_labelled(tmp_path: Path) -> None:
    result = evaluate(
        domains="tau-retail",
        tasks=["tau-retail-test-0", "tau-retail-test-1", "tau-retail-test-2"],
        policy="scripted:noisy?p=0.5",
        critic="rules",
        trials=2,
        db=sqlite_url(tmp_path / "critic.db"),
    )
    critic = result.summary.overall.critic
    assert critic is not None and critic.n_verified > critic.unknown
    counts = critic.counts
    assert counts.flag_invalid + counts.pass_invalid > 0  # the labeler found the noisy mistakes
    assert counts.pass_valid > 0
