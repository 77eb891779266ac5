"""Runs that differ in what they measured (user simulator, step limit, traits, tasks, grading,
critic loop) are refused by `compare` and `gate` unless forced, naming the difference; runs that
differ only in the agents and the seed compare."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._results.compare.comparability import comparability_problems
from castbench._results.report.summary import RunSummary
from castbench._run.api import evaluate
from castbench._trial.rollout import Limits
from tests.compare.stored_runs import SMALL_TASKS, Runs

cli = CliRunner()


def _with(summary: RunSummary, **config: Any) -> RunSummary:
    changed = type(summary.config).model_validate({**summary.config.model_dump(mode="json"), **config})
    return summary.model_copy(update={"config": changed})


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"user": "teamusers.sim:User"}, "user simulator differs: "),
        ({"extra": {"models": {"user": {"model": "openai/gpt-4o"}}}}, "user simulator differs: "),
        (
            {"limits": {"max_steps": 12}},
            'step limit (--max-steps) differs: {"max_steps":40} (baseline) vs {"max_steps":12}',
        ),
        ({"traits": {"impatience": "high"}}, "user traits (--traits) differs: "),
        ({"task_ids": ["retail-test-0001"]}, "task selection (--tasks) differs: "),
        ({"split": "train"}, "split differs: test (baseline) vs train (candidate)"),
        ({"grading": "tau"}, "grading mode differs: "),
    ],
)
def test_each_measurement_setting_is_named(runs: Runs, change: dict[str, Any], named: str) -> None:
    base = runs.low_noise.summary
    problems = comparability_problems(base, _with(base, **change))
    assert len(problems) == 1 and problems[0].startswith(named), problems


def test_agents_and_seeds_may_differ(runs: Runs) -> None:
    assert comparability_problems(runs.low_noise.summary, runs.high_noise.summary) == []
    assert comparability_problems(runs.low_noise.summary, runs.low_noise_other_seed.summary) == []
    with_critic = _with(runs.low_noise.summary, critic="rules", verification={"rounds": 1})
    assert comparability_problems(runs.low_noise.summary, with_critic) == []  # a critic's effect is the point


def test_the_critic_loop_matters_when_both_runs_have_a_critic(runs: Runs) -> None:
    base = _with(runs.low_noise.summary, critic="rules")
    cand = _with(runs.high_noise.summary, critic="scripted:noisy", verification={"rounds": 1})
    [problem] = comparability_problems(base, cand)
    assert problem.startswith("critic loop (--rounds, --on-exhausted, --verify) differs")


def test_compare_and_gate_refuse_a_different_step_limit_unless_forced(runs: Runs) -> None:
    short = evaluate(
        db=runs.db, domains="retail", policy="scripted:noisy?p=0.05", trials=2, tasks=SMALL_TASKS,
        limits=Limits(max_steps=12),
    )  # fmt: skip
    base, cand = runs.tiny_low.run_id, short.outcome.run_id
    refused = cli.invoke(app, ["compare", base, cand, "--db", runs.db], env={"COLUMNS": "300"})
    assert refused.exit_code == 2 and "step limit (--max-steps) differs" in refused.output
    gate = ["gate", "--db", runs.db, "--baseline", base, "--candidate", cand, "--metric", "pass^1"]
    gated = cli.invoke(app, [*gate, "--max-drop", "0.5"], env={"COLUMNS": "300"})
    assert gated.exit_code == 2 and "step limit (--max-steps) differs" in gated.output
    forced = cli.invoke(app, [*gate, "--max-drop", "0.5", "--force"], env={"COLUMNS": "300"})
    assert forced.exit_code != 2 and "step limit" in forced.output
