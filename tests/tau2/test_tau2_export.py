"""`castbench export RUN --format tau2`: the run as τ²'s `Results` JSON, which τ²'s own pydantic
models load and its own evaluator re-grades to the rewards castbench gave."""

from __future__ import annotations

import re
from pathlib import Path

from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench_tau2.source import import_tau2
from tests.support import invoke, sqlite_url


def _untimed(path: Path) -> bytes:
    """The file's bytes but its timestamps (τ²'s models stamp each object when it is made)."""
    return re.sub(rb'"timestamp": "[^"]*"', b'"timestamp": ""', path.read_bytes())


def test_exported_run_loads_in_tau2_and_regrades_equal(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    result = evaluate(
        domains="tau2-airline",
        split="test",
        tasks=["tau2-airline-2", "tau2-airline-6", "tau2-airline-8"],
        policy="scripted:noisy?p=0.5",
        trials=3,
        seed=5,
        grading="tau",
        db=db,
    )
    target = tmp_path / "results.json"
    exported = invoke("export", result.outcome.run_id, "--format", "tau2", "--out", str(target), "--db", db)
    assert exported.exit_code == 0, exported.output
    simulation = import_tau2("tau2.data_model.simulation")
    evaluator = import_tau2("tau2.evaluator.evaluator")
    results = simulation.Results.load(target)
    assert results.info.num_trials == 3
    assert results.info.agent_info.implementation == "castbench:scripted:noisy?p=0.5"
    assert len(results.simulations) == 9
    tasks = {task.id: task for task in results.tasks}
    rewards = []
    for run in results.simulations:
        regraded = evaluator.evaluate_simulation(
            run, tasks[run.task_id], evaluator.EvaluationType.ALL, solo_mode=False, domain="airline"
        )
        assert regraded.reward == run.reward_info.reward, run.id
        rewards.append(run.reward_info.reward)
    assert 0.0 in rewards and 1.0 in rewards

    # streamed, one simulation at a time, to the very bytes `Results.save` writes of the whole
    from castbench._records.store.export import stream_run
    from castbench_tau2.results import tau2_results, write_tau2_results

    streamed = stream_run(ResultsStore(db, read_only=True), result.outcome.run_id)
    whole = tau2_results(streamed)
    saved = tmp_path / "saved.json"
    whole.save(saved)
    assert _untimed(saved) == _untimed(target)
    # a run with nothing scored: empty lists written as pydantic writes them
    none_scored = streamed.model_copy(update={"trials": []})
    write_tau2_results(none_scored, target)
    empty = simulation.Results(
        info=whole.info, tasks=[], simulations=[], timestamp=simulation.Results.load(target).timestamp
    )
    empty.save(saved)
    assert _untimed(saved) == _untimed(target)
    write_tau2_results(streamed, target)

    # back into castbench: re-played and re-graded, not taken on trust; an ending τ² does not grade
    # (max_steps, too_many_errors) scores 0 whatever reward the file claims, and keeps its reason
    first, second = [run for run in results.simulations if run.reward_info.reward == 1.0][:2]
    first.termination_reason = simulation.TerminationReason.MAX_STEPS
    second.termination_reason = simulation.TerminationReason.TOO_MANY_ERRORS
    results.save(target)
    other = sqlite_url(tmp_path / "imported.db")
    imported = invoke("import", str(target), "--db", other, "--force")
    assert imported.exit_code == 0, imported.output
    assert "9 trials added" in imported.output
    store = ResultsStore(other)
    (row,) = store.runs()
    records = store.trials(row.id)
    stored = {(record.task_id, record.trial_index): record.reward for record in records}
    ends = {(record.task_id, record.seed): record.end_reason for record in records}
    assert ends[(f"tau2-airline-{first.task_id}", first.seed)] == "max_steps"
    assert ends[(f"tau2-airline-{second.task_id}", second.seed)] == "too_many_errors"
    task_ids = [f"tau2-airline-{run.task_id}" for run in results.simulations]
    expected = [0.0 if run in (first, second) else run.reward_info.reward for run in results.simulations]
    counts: dict[str, int] = {}
    for task_id, reward in zip(task_ids, expected, strict=True):
        index = counts[task_id] = counts.get(task_id, -1) + 1
        assert stored[(task_id, index)] == reward


def test_export_of_another_pack_says_why(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    result = evaluate(
        domains="retail", tasks=["retail-test-0001"], policy="oracle", trials=1, db=db, split="test"
    )
    out = invoke(
        "export", result.outcome.run_id, "--format", "tau2", "--db", db, "--out", str(tmp_path / "x.json")
    )
    assert out.exit_code != 0
    assert "needs a τ² pack" in out.output
