"""Runs on the τ² packs: the oracle scores 1.0 on every task it is given that is not broken (a
sample here; `castbench eval --policy oracle` on a whole split does the same), the noisy policy's
pass^k falls with k, and castbench's `tau` grading gives τ²'s evaluator's reward, trajectory for
trajectory (a sample of `bench/tau2_parity.py`)."""

from __future__ import annotations

from pathlib import Path

from castbench._run.api import evaluate
from castbench_authoring.parity import castbench_trial, gold_trajectory, perturbed, tau_reward
from castbench_tau2.domain import Tau2Domain
from castbench_tau2.parity import Tau2Reference
from tests.support import sqlite_url


def _sample(pack: Tau2Domain, count: int) -> list[str]:
    return [task.id for task in pack.tasks("test")][:count]


def test_oracle_scores_one_on_a_sample(pack: Tau2Domain, tmp_path: Path) -> None:
    for grading in ("tau", "castbench"):
        result = evaluate(
            domains=pack.name,
            split="test",
            tasks=_sample(pack, 6),
            policy="oracle",
            trials=1,
            grading=grading,
            db=sqlite_url(tmp_path / f"oracle-{grading}.db"),
        )
        summary = result.summary.domains[pack.name]
        assert summary.pass_hat[1] == 1.0, grading


def test_noisy_policy_pass_k_falls_with_k(pack: Tau2Domain, tmp_path: Path) -> None:
    result = evaluate(
        domains=pack.name,
        split="test",
        tasks=_sample(pack, 10),
        policy="scripted:noisy?p=0.5",
        trials=4,
        seed=3,
        grading="tau",
        db=sqlite_url(tmp_path / "noisy.db"),
    )
    curve = result.summary.domains[pack.name].pass_hat
    assert curve[1] > curve[4] and curve[1] < 1.0
    assert all(curve[k] >= curve[k + 1] for k in range(1, 4))


def test_rewards_equal_tau2s_evaluator_on_gold_and_perturbed(pack: Tau2Domain) -> None:
    reference = Tau2Reference(pack)
    tasks = [pack.task(task_id) for task_id in _sample(pack, 2)]
    if pack.name == "tau2-retail":
        tasks.append(pack.task("tau2-retail-64"))  # broken: its gold fails in τ² too
    cases = [(task, gold_trajectory(task)) for task in tasks] + list(perturbed(pack, tasks, 6, seed=1))
    outcomes = []
    for task, trajectory in cases:
        record = castbench_trial(pack, task, trajectory, pack.replay(task))
        ours = tau_reward(pack, task, record)
        assert reference.reward(record) == ours, (task.id, trajectory)
        outcomes.append(ours)
    assert 0.0 in outcomes and 1.0 in outcomes  # the sample tells passing from failing
