"""An incomplete run's first figure is one no agent can raise by failing differently: the
conservative bound, every unscored planned trial counted as a failure. Measured with the worst
case: every trial that would fail is made unscored instead (as an agent that poisons the trials
it is failing did, before its poison became storable). The headline then equals the honest run's
pass^k, while the estimate from scored trials alone is inflated; the console prints the headline
first and `--output` JSON says which basis it uses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from castbench._results.report.summary import RunSummary
from castbench._trial import episode
from castbench.domain import load_domain
from tests.support import invoke, sqlite_url

POLICY = "scripted:noisy?p=0.5"


def _tasks() -> str:
    return ",".join(task.id for task in load_domain("retail").tasks("test")[:6])


def _eval(db: str, out: Path, *more: str) -> tuple[RunSummary, str]:
    result = invoke(
        "eval", "--details", "--domain", "retail", "--tasks", _tasks(), "--trials", "2", "--policy", POLICY,
        "--db", db, "--output", str(out), "--allow-incomplete", *more,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return RunSummary.model_validate_json(out.read_text()), result.output


def _poison_failing_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every trial that grades as a failure ends as unscored instead."""
    real = episode.grade_trial

    def grade(*args: Any, **kwargs: Any) -> Any:
        graded = real(*args, **kwargs)
        if graded.reward != 1.0:
            raise RuntimeError("poisoned")
        return graded

    monkeypatch.setattr(episode, "grade_trial", grade)


def test_the_headline_of_a_poisoned_run_is_the_honest_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    honest, _ = _eval(db, tmp_path / "honest.json")
    assert honest.status == "complete" and honest.headline is not None
    assert honest.headline.basis == "all_trials_scored"
    assert honest.headline.pass_hat == honest.overall.pass_hat

    _poison_failing_trials(monkeypatch)  # the floors, kept in the store by the honest run, stay honest
    out = tmp_path / "poisoned.json"
    poisoned, console = _eval(db, out, "--fresh")
    assert poisoned.status == "incomplete" and poisoned.overall.unscored_trials > 0
    assert poisoned.headline is not None and poisoned.headline.basis == "unscored_as_failures"
    honest_1 = honest.overall.pass_hat[1]
    assert poisoned.overall.pass_hat[1] > honest_1  # the estimate from scored trials is inflated
    assert poisoned.headline.pass_hat[1] == pytest.approx(honest_1)  # the headline is not

    raw = json.loads(out.read_text())
    # said before any other figure (after the record's shape version)
    assert list(raw)[:4] == ["version", "run_id", "status", "headline"]
    assert raw["headline"]["basis"] == "unscored_as_failures"
    row = next(line for line in console.splitlines() if "pass^1 " in line)
    assert re.findall(r"\d\.\d{3}", row)[0] == f"{honest_1:.3f}"  # printed first
    assert f"scored only: {poisoned.overall.pass_hat[1]:.3f}" in row
