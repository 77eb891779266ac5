"""Parity with τ's own code, on a sample (bench/tau_parity.py runs the full set): the same
trajectory gets the same reward and the same tool outputs from τ's env and castbench's harness."""

from __future__ import annotations

import pytest

from castbench_authoring.parity import (
    Step,
    castbench_trial,
    closing,
    gold_trajectory,
    perturbed,
    tau_reward,
    tool_outputs,
)
from castbench_tau.domain import BROKEN_SUFFIX, TauDomain
from castbench_tau.parity import TauReference

SAMPLE = {
    "tau-telecom": (None, 40),
    "tau-telehealth": (None, 40),
    "tau-retail": (3, 4),
    "tau-airline": (2, 2),
}
"""pack -> (tasks per split for the gold check, None: all; perturbed trajectories)."""


def _agree(domain: TauDomain, reference: TauReference, task_id: str, trajectory: tuple[Step, ...]) -> None:
    task = domain.task(task_id)
    theirs, their_outputs = reference.run(*domain.locate(task_id), trajectory)
    record = castbench_trial(domain, task, trajectory, domain.replay(task))
    assert tau_reward(domain, task, record) == theirs, (task_id, trajectory, record.grade)
    assert tool_outputs(record) == their_outputs, task_id


@pytest.mark.slow
def test_gold_and_perturbed_trajectories_agree(pack: TauDomain) -> None:
    reference = TauReference(pack)
    per_split, count = SAMPLE[pack.name]
    every = []
    for split in pack.splits:
        every += pack.tasks(split)[:per_split] + pack.tasks(split + BROKEN_SUFFIX)[:per_split]
    for task in every:
        _agree(pack, reference, task.id, gold_trajectory(task))
    for task, trajectory in perturbed(pack, every, count, seed=11):
        _agree(pack, reference, task.id, trajectory)


def test_the_checks_can_tell_rewards_apart(packs: dict[str, TauDomain]) -> None:
    """A wrong write, a missing output, an output said with a comma: τ's verdicts, reproduced."""
    telehealth = packs["tau-telehealth"]
    reference = TauReference(telehealth)
    task = next(t for t in telehealth.tasks("test") if t.required_outputs and len(t.actions) > 2)
    gold = gold_trajectory(task)
    silent = (*gold[:-1], closing([]))
    comma = (*gold[:-1], closing([output.replace(" ", ", ", 1) for output in task.required_outputs]))
    for trajectory in (gold, silent, comma, gold[1:]):
        _agree(telehealth, reference, task.id, trajectory)
    assert reference.reward(*telehealth.locate(task.id), gold) == 1.0
    assert reference.reward(*telehealth.locate(task.id), silent) == 0.0
