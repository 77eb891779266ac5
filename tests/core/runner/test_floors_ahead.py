"""The reference floors are computed while the trials run (a thread of the eval process), so the
user does not wait for them after the last trial; the figures are those computed after, and an
error computing them reaches the caller as before."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from castbench._records.config import RunConfig
from castbench._run import floors
from castbench._run.api import evaluate
from castbench._run.floors import ReferenceFloors


@pytest.fixture(autouse=True)
def _own_state_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Floors kept on this machine by other tests (`floors/` in the state folder) stay out."""
    monkeypatch.setenv("CASTBENCH_STATE_DIR", str(tmp_path / "state"))


OPTIONS: dict[str, Any] = {
    "domains": "retail",
    "trials": 2,
    "tasks": ["retail-test-0001", "retail-test-0002"],
}


def test_floors_run_beside_the_trials_and_give_the_same_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compute = floors._floors.__wrapped__
    where: list[str] = []

    def spied(canonical: str) -> ReferenceFloors:
        where.append(threading.current_thread().name)
        return compute(canonical)

    monkeypatch.setattr(floors, "_floors", spied)
    result = evaluate(db=f"sqlite:///{tmp_path}/runs.db", policy="scripted:noisy", **OPTIONS)
    assert where == ["castbench-floors"]
    config = RunConfig.model_validate(result.summary.config)
    assert result.summary.floors == compute(floors._canonical(config))


def test_an_error_computing_the_floors_reaches_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(canonical: str) -> ReferenceFloors:
        raise RuntimeError("floors broke")

    monkeypatch.setattr(floors, "_floors", broken)
    with pytest.raises(RuntimeError, match="floors broke"):
        evaluate(db=f"sqlite:///{tmp_path}/runs.db", policy="oracle", **OPTIONS)


def test_floors_are_kept_per_domain_version_across_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run on a new store of the same tasks and code reads the floors the first computed (kept
    in the state folder); other tasks, or a changed file there, compute them again, to the same
    figures."""
    compute = floors._floors.__wrapped__
    computed: list[str] = []

    def counted(canonical: str) -> ReferenceFloors:
        computed.append(canonical)
        return compute(canonical)

    monkeypatch.setattr(floors, "_floors", counted)
    first = evaluate(db=f"sqlite:///{tmp_path}/a.db", policy="oracle", **OPTIONS)
    second = evaluate(db=f"sqlite:///{tmp_path}/b.db", policy="scripted:noisy", **OPTIONS)
    assert len(computed) == 1 and second.summary.floors == first.summary.floors is not None
    (kept,) = (tmp_path / "state" / "floors").glob("*.json")
    kept.write_text("{not json")  # cut short: computed again, and kept again
    third = evaluate(db=f"sqlite:///{tmp_path}/c.db", policy="oracle", **OPTIONS)
    assert len(computed) == 2 and third.summary.floors == first.summary.floors
    other = evaluate(db=f"sqlite:///{tmp_path}/d.db", policy="oracle", **{**OPTIONS, "trials": 3})
    assert len(computed) == 3 and other.summary.floors != first.summary.floors
