"""The earned-outcome check on the τ packs: castbench grading makes a read-only task's pass depend on
the gold's look-ups having been made; `--grading tau` keeps τ's rule (state and outputs only)."""

from __future__ import annotations

from pathlib import Path

from castbench._run.api import evaluate
from castbench_tau.domain import TauDomain
from tests.support import sqlite_url


def _earned_tasks(pack: TauDomain) -> list[str]:
    return [task.id for task in pack.tasks("test") if task.earned is not None]


def test_every_earned_spec_comes_from_the_gold_look_ups(packs: dict[str, TauDomain]) -> None:
    for pack in packs.values():
        for task in pack.tasks():
            if task.earned is None:
                continue
            assert task.outcome == "no_change", task.id
            gold = {(call.name, call.canonical()) for call in task.actions}
            for lookup in task.earned.lookups:
                assert (lookup.any_of[0].name, lookup.any_of[0].canonical()) in gold, task.id
                assert not pack.toolkit.is_write(lookup.any_of[0].name)


def test_blanket_refusal_earns_no_read_only_task_but_tau_grading_keeps_taus_rule(
    packs: dict[str, TauDomain], tmp_path: Path
) -> None:
    pack = packs["tau-airline"]
    tasks = _earned_tasks(pack)
    assert len(tasks) >= 5
    db = sqlite_url(tmp_path / "earned.db")
    runs = {
        grading: evaluate(
            domains=pack.name, tasks=tasks, policy="scripted:refuse", trials=1, grading=grading, db=db
        )
        for grading in ("castbench", "tau")
    }
    assert runs["castbench"].summary.domains[pack.name].pass_hat[1] == 0.0
    assert runs["tau"].summary.domains[pack.name].pass_hat[1] > 0.5  # τ passes doing nothing
    oracle = evaluate(domains=pack.name, tasks=tasks, policy="oracle", trials=1, db=db)
    assert oracle.summary.domains[pack.name].pass_hat[1] == 1.0


def test_an_identity_look_up_stands_for_another(packs: dict[str, TauDomain]) -> None:
    pack = packs["tau-retail"]
    finders = [
        lookup
        for task in pack.tasks()
        if task.earned is not None
        for lookup in task.earned.lookups
        if lookup.any_of[0].name.startswith("find_")
    ]
    assert finders
    for lookup in finders:
        others = {call.name for call in lookup.any_of[1:]}
        assert others and all(not call.arguments for call in lookup.any_of[1:])
        assert lookup.any_of[0].name not in others
