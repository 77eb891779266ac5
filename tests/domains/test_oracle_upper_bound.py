"""The oracle is the upper bound of castbench's own domains too: plain and strict pass^1 are 1.0
on every task (the τ packs: `tests/domains/tau/test_tau_upper_bound.py`). One trial per task is
enough: the oracle and the scripted user are deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._run.api import evaluate
from castbench.domain import load_domain
from tests.support import DOMAINS, sqlite_url


def _assert_upper_bound(name: str, split: str, tasks: list[str] | None, db: str) -> None:
    report = evaluate(
        domains=name, split=split, tasks=tasks, policy="oracle", trials=1, db=db
    ).summary.domains[name]
    assert report.strict is not None
    failed = [task for task, counts in report.per_task.items() if counts.successes < counts.n]
    broke = [task for task, counts in report.strict.per_task.items() if counts.successes < counts.n]
    assert (failed, broke) == ([], []), (name, split)
    assert report.pass_hat[1] == report.strict.pass_hat[1] == 1.0


@pytest.mark.parametrize("name", DOMAINS)
def test_the_oracle_passes_plain_and_strict_on_a_sample(name: str, tmp_path: Path) -> None:
    """One task of each family of the test split (the slow test below runs them all)."""
    first_of_family: dict[str, str] = {}
    for task in load_domain(name).tasks("test"):
        first_of_family.setdefault(task.family, task.id)
    _assert_upper_bound(name, "test", sorted(first_of_family.values()), sqlite_url(tmp_path / "oracle.db"))


@pytest.mark.slow
@pytest.mark.parametrize("name", DOMAINS)
def test_the_oracle_passes_plain_and_strict_on_every_task(name: str, tmp_path: Path) -> None:
    for split in load_domain(name).splits:
        _assert_upper_bound(name, split, None, sqlite_url(tmp_path / "oracle.db"))
