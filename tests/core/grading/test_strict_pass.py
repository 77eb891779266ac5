"""The strict reward: a trial that reaches the right state by breaking the domain policy passes
the plain (τ-Bench) check but not the strict one, and both figures are reported side by side."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._results.report.summary import summarize_run
from castbench._run.api import evaluate

RECKLESS = "tests.core.fixtures_agents:RecklessCancelPolicy"
TASK = "retail-test-0002"  # cancel a pending order


def test_cancelling_without_authenticating_or_confirming_passes_plain_but_fails_strict(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = evaluate(domains="retail", tasks=[TASK], policy=RECKLESS, trials=2, db=db)
    (trial, _) = ResultsStore(db).trials(result.outcome.run_id)
    assert trial.grade is not None and trial.grade.state_ok
    assert trial.passed and trial.reward == 1.0  # the state is right: τ-Bench's check passes it
    assert trial.strict_passed is False and trial.grade.strict_reward == 0.0
    assert [b.reason for b in trial.grade.policy_breaks] == ["the user has not been authenticated yet"]
    assert {b.tool for b in trial.grade.policy_breaks} == {"cancel_pending_order"}
    report = result.summary.domains["retail"]
    assert report.pass_hat[1] == 1.0
    assert report.strict is not None and report.strict.pass_hat == {1: 0.0, 2: 0.0}


def test_the_oracle_passes_strict_too(tmp_path: Path) -> None:
    result = evaluate(
        domains="retail", tasks=[TASK], policy="oracle", trials=1, db=f"sqlite:///{tmp_path / 'o.db'}"
    )
    report = result.summary.domains["retail"]
    assert report.pass_hat[1] == 1.0 and report.strict is not None and report.strict.pass_hat[1] == 1.0


def test_tables_and_summary_json_show_both(tmp_path: Path) -> None:
    db, out = f"sqlite:///{tmp_path / 'r.db'}", tmp_path / "summary.json"
    result = CliRunner().invoke(
        app,
        ["eval", "--details", "--domain", "retail", "--tasks", TASK, "--policy", RECKLESS, "--trials", "1",
         "--db", db, "--output", str(out)],
        env={"COLUMNS": "200", "CASTBENCH_DB": None},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "strict pass^1" in result.output
    summary = json.loads(out.read_text())
    assert summary["domains"]["retail"]["pass_hat"]["1"] == 1.0
    assert summary["domains"]["retail"]["strict"]["pass_hat"]["1"] == 0.0
    assert summary["config"]["grading"] == "castbench"
    shown = CliRunner().invoke(
        app,
        ["runs", "show", "latest", "--task", TASK, "--db", db],
        env={"COLUMNS": "200", "CASTBENCH_DB": None},
    )
    assert (
        "policy broken at step 1 (cancel_pending_order): the user has not been authenticated yet"
        in shown.output
    )


def test_trials_stored_before_strict_grading_have_no_strict_figure(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = evaluate(domains="retail", tasks=[TASK], policy="oracle", trials=1, db=db)
    store = ResultsStore(db)
    old = [
        trial.model_copy(update={"grade": trial.grade.model_copy(update={"strict_reward": None})})
        for trial in store.trials(result.outcome.run_id)
        if trial.grade is not None
    ]
    assert old[0].strict_passed is None
    summary = summarize_run("old", store.config(result.outcome.run_id), old)
    assert summary.domains["retail"].pass_hat[1] == 1.0 and summary.domains["retail"].strict is None
