"""`castbench compare` and the comparison behind it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._results.compare.comparability import comparability_problems
from castbench._results.compare.runs import compare_runs
from castbench._run.api import evaluate
from tests.compare.stored_runs import Runs

cli = CliRunner()


def test_paired_differences_and_flips(runs: Runs) -> None:
    comparison = compare_runs(runs.low_noise.summary, runs.high_noise.summary)
    [retail] = comparison.domains
    assert comparison.overall is None  # one domain: nothing to pool
    assert retail.shared_tasks == 120 and not retail.only_baseline and not retail.only_candidate
    assert [p.metric for p in retail.pass_hat] == [f"pass^{k}" for k in range(1, 9)]
    base = runs.low_noise.summary.domains["retail"]
    for paired in retail.pass_hat:
        k = int(paired.metric.split("^")[1])
        assert paired.baseline == base.pass_hat[k]
        assert paired.low <= paired.difference <= paired.high
    assert retail.pass_hat[3].high < 0  # pass^4 credibly worse
    reliable = {t for t, o in base.per_task.items() if o.successes == o.n}
    assert retail.became_unreliable and set(retail.became_unreliable) <= reliable
    assert not set(retail.became_reliable) & reliable
    assert retail.critic == []  # no critic in either run


def test_compare_cli(runs: Runs) -> None:
    result = cli.invoke(
        app,
        ["compare", runs.low_noise.run_id, str(runs.high_noise.path), "--db", runs.db],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "retail: 120 shared tasks" in result.output
    assert "▼ credibly worse" in result.output and "reliable → unreliable" in result.output


def test_refuses_incomparable_runs(runs: Runs, tmp_path: Path) -> None:
    assert comparability_problems(runs.low_noise.summary, runs.tiny_low.summary) == [
        'task selection (--tasks) differs: null (baseline) vs ["retail-test-0001","retail-test-0002",'
        '"retail-test-0003"] (candidate)'
    ]
    args = ["compare", str(runs.low_noise.path), str(runs.tiny_low.path), "--db", runs.db]
    refused = cli.invoke(app, args, env={"COLUMNS": "200"})
    assert refused.exit_code == 2 and "refusing to compare" in refused.output and "--force" in refused.output
    forced = cli.invoke(app, [*args, "--force"], env={"COLUMNS": "200"})
    assert forced.exit_code == 0, forced.output
    assert (
        "retail: 3 shared tasks" in forced.output
        and "pass^2" in forced.output
        and "pass^3" not in forced.output
    )
    data = json.loads(runs.low_noise.path.read_text())
    data["config"]["domains"]["retail"] = "7-1"
    bumped = tmp_path / "bumped.json"
    bumped.write_text(json.dumps(data))
    [problem] = comparability_problems(runs.low_noise.summary, runs.low_noise.summary.model_validate(data))
    assert "version 3-0 vs 7-1" in problem


def test_critic_rates_are_compared(db_url: str) -> None:
    db = db_url
    tasks = [f"retail-test-{i:04d}" for i in range(1, 13)]
    common = {"db": db, "domains": "retail", "policy": "scripted:noisy", "trials": 2, "tasks": tasks}
    rules = evaluate(critic="rules", **common).summary
    noisy = evaluate(critic="scripted:noisy?false_flag=0.3", **common).summary
    [retail] = compare_runs(rules, noisy).domains
    assert [delta.rate for delta in retail.critic] == ["false_flag_rate", "detection_rate"]
    false_flag = retail.critic[0]
    assert false_flag.baseline == rules.domains["retail"].critic.false_flag_rate  # type: ignore[union-attr]
    assert false_flag.difference > 0  # the noisy critic flags valid actions far more often
    result = cli.invoke(app, ["compare", rules.run_id, noisy.run_id, "--db", db], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "false flag rate" in result.output
