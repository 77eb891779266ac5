"""The oracle passes every retail test task, every time: the tasks, the tools and the grading
agree with each other (pass^1..pass^8 = 1.0 over the whole test split)."""

from __future__ import annotations

from pathlib import Path

from castbench.api import evaluate
from castbench.domain import load_domain
from castbench.store import ResultsStore


def test_oracle_passes_every_retail_test_task_eight_times(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'oracle.db'}"
    result = evaluate(domains="retail", policy="oracle", trials=8, db=db)
    n_tasks = len(load_domain("retail").tasks("test"))
    report = result.summary.domains["retail"]
    assert report.n_tasks == n_tasks and report.n_trials == 8 * n_tasks
    assert report.pass_hat == {k: 1.0 for k in range(1, 9)}
    assert report.pass_at == {k: 1.0 for k in range(1, 9)}
    assert report.errored_trials == 0 and report.incomplete_tasks == [] and report.surface_success == 0
    assert report.end_reasons == {"user_stop": 8 * n_tasks}
    assert result.summary.overall.pass_hat[8] == 1.0
    assert result.summary.config["privileged"] == ["policy"]
    assert result.outcome.ran == 8 * n_tasks and not result.outcome.resumed
    assert ResultsStore(db).count_trials(result.outcome.run_id) == 8 * n_tasks
