"""The refusal floors on every castbench domain: refusing everything scores nothing, looking up and
then refusing scores only refusals whose reason it states. Both are ordinary, unprivileged agents."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from castbench._agents.registry import resolve
from castbench._base.conversation import ReplyAction
from castbench._grading.outputs import missing_outputs
from castbench._records.store import ResultsStore
from castbench._results.report.tables import reliability_table
from castbench._run.api import build_config, evaluate
from castbench._run.floors import FLOOR_POLICIES
from castbench._run.plan import plan_trials
from castbench._run.work import ExpectedStates, run_job
from castbench._trial.rollout import AgentSet
from castbench.domain import load_domain

DOMAINS = ["airline", "retail", "telecom", "telehealth"]


@pytest.mark.parametrize("policy", ["scripted:refuse", "scripted:lookup-refuse", "scripted:lookup-spray"])
def test_the_floor_policies_are_not_privileged(policy: str) -> None:
    assert not resolve("policy", policy).privileged


def test_blanket_refusal_scores_nothing_in_any_domain(tmp_path: Path) -> None:
    result = evaluate(
        domains=",".join(DOMAINS), policy="scripted:refuse", trials=1, db=f"sqlite:///{tmp_path}/r.db"
    )
    for name in DOMAINS:
        assert result.summary.domains[name].pass_hat[1] <= 0.02, name
    assert result.summary.config.privileged == []
    floors = result.summary.floors
    assert floors is not None and floors.overall["refuse"] == {1: result.summary.overall.pass_hat[1]}


def test_every_summary_carries_both_floors_from_the_same_engine(tmp_path: Path) -> None:
    """The floors of a run equal what running the floor policy itself gives on those tasks; the
    floor policies are deterministic, so a task passes all its trials or none."""
    tasks = [t.id for t in load_domain("retail").tasks("test") if t.outcome != "change"][:12]
    options = {
        "domains": "retail",
        "trials": 3,
        "tasks": tasks,
        "db": f"sqlite:///{tmp_path}/f.db",
    }
    noisy = evaluate(policy="scripted:noisy", **options).summary
    floor_run = evaluate(policy="scripted:lookup-refuse", **options).summary
    assert noisy.floors is not None and floor_run.floors == noisy.floors
    retail = floor_run.domains["retail"]
    assert {outcome.successes for outcome in retail.per_task.values()} <= {0, 3}
    assert noisy.floors.domains["retail"]["lookup-refuse"] == retail.pass_hat
    assert 0 < retail.pass_hat[1] < 1 and noisy.floors.domains["retail"]["refuse"] == {1: 0.0, 2: 0.0, 3: 0.0}
    table = io.StringIO()
    Console(file=table, width=200).print(reliability_table(noisy))
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in table.getvalue().splitlines()
        if "floor" in line
    }
    spray = noisy.floors.domains["retail"]["lookup-spray"][1]
    assert rows == {
        "floor: refuse": "0.000",
        "floor: lookup-refuse": f"{retail.pass_hat[1]:.3f}",
        "floor: lookup-spray": f"{spray:.3f}",
    }


def test_look_up_then_refuse_passes_only_refusals_whose_reason_it_states(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/l.db"
    result = evaluate(domains=",".join(DOMAINS), policy="scripted:lookup-refuse", trials=1, db=db)
    tasks = {task.id: task for name in DOMAINS for task in load_domain(name).tasks("test")}
    passed = [trial for trial in ResultsStore(db).trials(result.outcome.run_id) if trial.passed]
    assert passed, "it should earn the refusals whose reason is a status it cites"
    for trial in passed:
        task = tasks[trial.task_id]
        replies = [step.action.text for step in trial.steps if isinstance(step.action, ReplyAction)]
        assert task.outcome == "refuse" and task.earned is not None, task.id
        for reason in task.earned.reasons:
            assert any(not missing_outputs([wording], replies) for wording in reason.any_of), task.id
    refusals = sum(task.outcome == "refuse" for task in tasks.values())
    assert len(passed) < refusals  # a status is not every refusal's reason


def test_floor_trials_run_unlabelled_and_pass_as_labelled_ones_do() -> None:
    """The floors read the plain reward alone, so their trials skip the labeler: each passes or
    fails as the same trial with labels does, and its record says it has no labels and no strict
    reward (never a strict figure the labeler did not judge)."""
    user, expected = resolve("user", "scripted"), ExpectedStates()
    passes = 0
    for name in DOMAINS:
        config, _ = build_config(domains=name, trials=1, seed=5)
        refusals_first = sorted(plan_trials(config), key=lambda job: job.task.outcome == "change")
        for spec in FLOOR_POLICIES.values():
            agents = AgentSet(policy=resolve("policy", spec), user=user)
            for job in refusals_first[:20]:
                labelled = run_job(job, config, agents, expected)
                bare = run_job(job, config, agents, expected, labelled=False)
                assert bare.passed == labelled.passed, job.task.id
                assert len(bare.steps) == len(labelled.steps), job.task.id
                assert all(p.label is None for step in bare.steps for p in step.proposals)
                assert bare.grade is not None and bare.grade.strict_reward is None
                assert labelled.grade is not None and labelled.grade.strict_reward is not None
                passes += bare.passed
    assert passes > 0  # passing trials compared too, not failing ones alone
