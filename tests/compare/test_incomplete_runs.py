"""Unscored work never raises a figure: pass^k is over every task a run planned, and the gate
refuses an incomplete run unless forced, naming what is missing (leaderboards: tests/publish)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._results.report.summary import RUN_SUMMARY, RunSummary, summarize_run
from tests.compare.stored_runs import Runs

cli = CliRunner()
DROPPED = "retail-test-0002"


def _without_task(runs: Runs, run_id: str, task_id: str, keep: int = 0) -> tuple[ResultsStore, list]:  # type: ignore[type-arg]
    """The run's records, as if all but `keep` trials of `task_id` had never been scored."""
    store = ResultsStore(runs.db)
    records = store.trials(run_id)
    kept = [r for r in records if r.task_id != task_id or r.trial_index < keep]
    return store, kept


def test_a_task_without_stored_trials_counts_and_is_listed(runs: Runs) -> None:
    store, kept = _without_task(runs, runs.high_noise.run_id, DROPPED)
    config = store.config(runs.high_noise.run_id)
    summary = summarize_run(runs.high_noise.run_id, config, kept)
    full = runs.high_noise.summary.overall
    report = summary.overall
    assert summary.status == "incomplete"
    assert report.n_tasks == full.n_tasks  # the task is still in the denominator ...
    assert (
        report.missing_tasks == [f"retail/{DROPPED}"] and report.per_task[f"retail/{DROPPED}"].successes == 0
    )
    assert report.pass_hat[1] <= full.pass_hat[1]  # ... so dropping it can only lower pass^k
    assert report.unscored_trials == config.trials
    assert DROPPED in (summary.incomplete_reason() or "")


def test_partly_scored_tasks_get_a_conservative_bound(runs: Runs) -> None:
    store, kept = _without_task(runs, runs.low_noise.run_id, DROPPED, keep=3)
    summary = summarize_run(runs.low_noise.run_id, store.config(runs.low_noise.run_id), kept)
    report = summary.overall
    assert report.incomplete_tasks == [f"retail/{DROPPED}"] and report.missing_tasks == []
    assert report.per_task[f"retail/{DROPPED}"].n == 3 and report.unscored_trials == 5
    assert report.pass_hat_conservative is not None
    assert all(report.pass_hat_conservative[k] <= report.pass_hat[k] for k in report.pass_hat)
    assert report.pass_hat_conservative[1] < report.pass_hat[1]
    assert runs.low_noise.summary.overall.pass_hat_conservative is None  # complete: no bound needed


def _incomplete_summary(runs: Runs, folder: Path) -> Path:
    store, kept = _without_task(runs, runs.low_noise_other_seed.run_id, DROPPED)
    summary = summarize_run(
        runs.low_noise_other_seed.run_id, store.config(runs.low_noise_other_seed.run_id), kept
    )
    path = folder / "incomplete.json"
    path.write_text(summary.model_dump_json())
    return path


def test_the_gate_refuses_an_incomplete_run_unless_forced(runs: Runs, tmp_path: Path) -> None:
    candidate = _incomplete_summary(runs, tmp_path)
    args = ["gate", "--db", runs.db, "--baseline", str(runs.low_noise.path), "--candidate", str(candidate)]
    args += ["--metric", "pass^1", "--max-drop", "0.1"]
    refused = cli.invoke(app, args, env={"COLUMNS": "200"})
    said = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "incomplete" in said and DROPPED in said and "--force" in said
    forced = cli.invoke(app, [*args, "--force"], env={"COLUMNS": "200"})
    assert forced.exit_code in (0, 1, 3), forced.output
    assert "forced" in forced.output and DROPPED in " ".join(forced.output.split())


def test_a_summary_written_before_run_status_existed_reads_as_incomplete(runs: Runs) -> None:
    raw = json.loads(runs.low_noise.path.read_text())
    for key in ("version", "status"):  # a version 1 summary: no status yet
        raw.pop(key, None)
    raw["overall"]["incomplete_tasks"] = ["retail/retail-test-0001"]
    assert RUN_SUMMARY.loads(RunSummary, json.dumps(raw), "summary.json").status == "incomplete"
