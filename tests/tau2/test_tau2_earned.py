"""The τ² packs' read-only tasks are earned as the τ packs' are (`published_earned_spec`): the
gold's look-ups made, no amount or id of the records they lead to but do not read, an asked-for
amount given as the answer. castbench grading stops the value sprays there; `--grading tau`
keeps τ²'s rule (state and outputs only)."""

from __future__ import annotations

from castbench._agents.registry import resolve
from castbench._run.api import build_config
from castbench._run.plan import plan_trials
from castbench._run.work import ExpectedStates, run_job
from castbench._trial.episode import AgentSet
from castbench_tau2.domain import Tau2Domain

SPRAYS = (
    "scripted:lookup-spray",
    "scripted:lookup-spray?reasons=false&offer=false",
    "scripted:lookup-spray?reasons=false&offer=false&tied=true",
)


def _read_only(pack: Tau2Domain) -> list[str]:
    return [task.id for task in pack.tasks("test") if task.outcome == "no_change"]


def _passed(pack: Tau2Domain, tasks: list[str], policy: str, grading: str = "castbench") -> set[str]:
    config, _ = build_config(domains=pack.name, policy=policy, trials=1, tasks=tasks, grading=grading)
    agents = AgentSet(policy=resolve("policy", policy), user=resolve("user", "scripted"))
    expected = ExpectedStates()
    return {job.task.id for job in plan_trials(config) if run_job(job, config, agents, expected).passed}


def test_read_only_tasks_get_the_gold_look_ups_and_the_other_records_claims(pack: Tau2Domain) -> None:
    earned = [task for task in pack.tasks() if task.earned is not None]
    assert earned, pack.name
    for task in earned:
        assert task.outcome == "no_change" and task.earned is not None and task.earned.derived, task.id
        gold = {call.canonical() for call in task.actions}
        assert all(lookup.any_of[0].canonical() in gold for lookup in task.earned.lookups), task.id
    assert any(task.earned is not None and task.earned.false_claims for task in earned), pack.name


def test_no_value_spray_passes_a_read_only_task_that_looking_up_and_refusing_fails(pack: Tau2Domain) -> None:
    tasks = _read_only(pack)
    floor = _passed(pack, tasks, "scripted:lookup-refuse")
    for spray in SPRAYS:
        extra = _passed(pack, tasks, spray) - floor
        assert not extra, f"{pack.name}: {spray} passes {sorted(extra)} which lookup-refuse fails"
    assert _passed(pack, tasks, "oracle") == set(tasks)


def test_tau_grading_keeps_tau2s_rule() -> None:
    from castbench.domain import load_domain

    pack = load_domain("tau2-retail")
    assert isinstance(pack, Tau2Domain)
    tasks = _read_only(pack)
    spray = "scripted:lookup-spray?reasons=false&offer=false"
    # the values spray states every value it read, the outputs among them: τ²'s rule passes it
    assert len(_passed(pack, tasks, spray, grading="tau")) > len(_passed(pack, tasks, spray))
