"""`castbench export RUN --format inspect`: the run read back through Inspect's own reader has one
sample per trial, the trial's messages and tool calls, and scores equal to castbench's own."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections import Counter
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from castbench._base.conversation import ToolCallAction
from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run
from castbench._results.report.summary import RunSummary
from castbench._run.api import evaluate
from castbench_bridges.inspect_log import inspect_log
from tests.support import sqlite_url

# inspect_ai is imported by the test that reads its log, not here: every pytest-xdist worker
# collects every file.
pytestmark = pytest.mark.extra("bridges")  # Inspect AI

TASKS = ["retail-test-0001", "retail-test-0002", "retail-test-0003", "retail-test-0005"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, RunSummary]:
    """A small retail run with mistakes (scripted:noisy) and a critic that rejects some of them."""
    db = sqlite_url(tmp_path_factory.mktemp("inspect") / "runs.db")
    result = evaluate(
        db=db, domains="retail", tasks=TASKS, trials=3, seed=4, policy="scripted:noisy", critic="rules"
    )
    return db, result.outcome.run_id, result.summary


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_an_exported_run_reads_back_through_inspect_with_castbench_scores(
    run: tuple[str, str, RunSummary], tmp_path: Path, suffix: str
) -> None:
    from inspect_ai.log import read_eval_log

    db, run_id, summary = run
    out = tmp_path / f"log{suffix}"
    result = CliRunner().invoke(app, ["export", run_id, "--format", "inspect", "--out", str(out), "--db", db])
    assert result.exit_code == 0, result.output
    log = read_eval_log(str(out))
    exported = export_run(ResultsStore(db), run_id)
    records = {(f"{r.domain}/{r.task_id}", r.trial_index + 1): r for r in exported.trials}
    assert log.status == "success" and log.samples is not None
    assert {(s.id, s.epoch) for s in log.samples} == set(records)  # one sample per trial
    passes: Counter[str] = Counter()
    for sample in log.samples:
        record = records[(sample.id, sample.epoch)]
        assert sample.scores is not None
        scores = {name: score.value for name, score in sample.scores.items()}
        assert scores["reward"] == record.reward
        assert scores["pass"] == float(record.passed)
        assert scores["strict_pass"] == float(bool(record.strict_passed))
        verdicts = [p.verdict for step in record.steps for p in step.proposals if p.verdict is not None]
        assert scores["critic"]["verified"] == len(verdicts)
        assert scores["critic"]["flagged"] == sum(v.flags for v in verdicts)
        assert sample.metadata["task"] == record.task_id and sample.metadata["trial"] == record.trial_index
        assert (sample.metadata["seed"], sample.metadata["domain_version"]) == (
            record.seed,
            record.domain_version,
        )
        # messages: the opening, every executed tool call with its result, every rejected call
        executed = [s.action for s in record.steps if isinstance(s.action, ToolCallAction)]
        calls = [c for m in sample.messages if m.role == "assistant" for c in (m.tool_calls or [])]
        results = [m for m in sample.messages if m.role == "tool"]
        rejected = [m for m in results if m.error is not None and m.error.type == "approval"]
        assert sample.messages[0].text == record.opening
        assert len(calls) == len(results) == len(executed) + len(rejected)
        assert [c.function for c in calls if not c.id.startswith("step")] == [a.name for a in executed]
        passes[str(sample.id)] += int(scores["pass"])
    overall = summary.overall
    assert dict(passes) == {task: outcome.successes for task, outcome in overall.per_task.items()}
    assert sum(passes.values()) > 0 and any(s.scores["critic"].value["flagged"] for s in log.samples)  # type: ignore[index]
    assert log.results is not None
    metrics = {score.name: {k: m.value for k, m in score.metrics.items()} for score in log.results.scores}
    assert metrics["pass"]["pass^3"] == pytest.approx(overall.pass_hat[3])
    assert overall.strict is not None and metrics["strict_pass"]["strict pass^1"] == pytest.approx(
        overall.strict.pass_hat[1]
    )


def test_an_unscored_trial_is_a_sample_with_an_error_and_no_scores(run: tuple[str, str, RunSummary]) -> None:
    db, run_id, _ = run
    exported = export_run(ResultsStore(db), run_id)
    broken = exported.trials[0].model_copy(
        update={"status": "error", "reward": None, "end_reason": "infra_error", "error": "server went away"}
    )
    log = inspect_log(exported.model_copy(update={"trials": [broken, *exported.trials[1:]]}))
    assert log.samples is not None
    sample = next(
        s for s in log.samples if s.epoch == broken.trial_index + 1 and s.id.endswith(broken.task_id)
    )  # type: ignore[union-attr]
    assert sample.scores is None and sample.error is not None and "went away" in sample.error.message
    assert log.results is not None and log.results.completed_samples == len(exported.trials) - 1


def test_an_inspect_log_must_be_eval_or_json(run: tuple[str, str, RunSummary], tmp_path: Path) -> None:
    db, run_id, _ = run
    result = CliRunner().invoke(
        app, ["export", run_id, "--format", "inspect", "--out", str(tmp_path / "log.txt"), "--db", db]
    )
    assert result.exit_code == 2 and "error: an Inspect log is a .eval or .json file" in result.output
    result = CliRunner().invoke(app, ["export", run_id, "--format", "tsv", "--db", db])
    assert result.exit_code == 2 and "unknown --format 'tsv'" in result.output


@pytest.mark.slow
def test_inspect_view_serves_the_exported_run(run: tuple[str, str, RunSummary], tmp_path: Path) -> None:
    """`inspect view` (Inspect's own viewer server) lists the exported log and serves it whole."""
    db, run_id, _ = run
    logs = tmp_path / "logs"
    result = CliRunner().invoke(
        app, ["export", run_id, "--format", "inspect", "--out", str(logs / "run.eval"), "--db", db]
    )
    assert result.exit_code == 0, result.output
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    inspect = Path(sys.executable).with_name("inspect")
    args = [str(inspect), "view", "--log-dir", str(logs), "--host", "127.0.0.1", "--port", str(port)]
    viewer = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        listed: dict[str, Any] = {}
        for _ in range(240):
            with suppress(httpx.HTTPError):
                listed = httpx.get(f"http://127.0.0.1:{port}/api/logs", timeout=2).json()
                break
            time.sleep(0.5)
        (entry,) = listed["files"]
        assert entry["task"] == "castbench/retail"
        served = httpx.get(f"http://127.0.0.1:{port}/api/logs/{entry['name']}", timeout=30).json()
        assert served["status"] == "success" and len(served["samples"]) == len(TASKS) * 3
        assert [s["name"] for s in served["results"]["scores"]] == ["reward", "pass", "strict_pass", "critic"]
    finally:
        viewer.terminate()
        viewer.wait(timeout=10)
