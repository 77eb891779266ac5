"""The reference agents on a set of tasks, one trial each: the oracle policy must score 1.0 on
every task (a task it cannot solve has a ground truth no agent can reach through the
conversation: `domains validate --tasks-file` checks a private split with it), and the
blanket-refusal floor (`scripted:refuse`: no tool call, a refusal of whatever is asked) must pass
none (a task it passes grades nothing its request needs: `domains validate` checks every task)."""

from __future__ import annotations

from collections.abc import Sequence

from castbench._agents.registry import resolve
from castbench._domain.domain import Domain, ExpectedStateError
from castbench._domain.task import Task, TaskFileError
from castbench._trial.rollout import AgentSet, TrialSpec, run_trial
from castbench._trial.seeds import trial_seed
from castbench_authoring.validate import ValidationReport
from castbench_authoring.validate import validate_domain as replay_checks

__all__ = ["REFUSAL_FLOOR", "oracle_failures", "refusal_wins", "validate_domain"]

REFUSAL_FLOOR = "scripted:refuse"
"""The floor policy that refuses everything without a tool call."""


def oracle_failures(domain: Domain, tasks: Sequence[Task], seed: int = 0) -> list[str]:
    """Each task the oracle (with the scripted user) does not solve, with how its trial ended."""
    agents = AgentSet(policy=resolve("policy", "oracle"), user=resolve("user", "scripted"))
    problems = []
    for task in tasks:
        seeded = trial_seed(seed, domain.name, task.id, 0)
        record = run_trial(TrialSpec(domain, task, 0, seeded, agents, domain.replay(task)))
        if not record.passed:
            problems.append(
                f"{domain.name} task {task.id}: the oracle scored {record.reward} ({record.end_reason})"
            )
    return problems


def refusal_wins(domain: Domain, tasks: Sequence[Task], seed: int = 0) -> list[str]:
    """Each task the blanket-refusal floor passes (with the scripted user), said as the problem
    it is. A task whose ground truth does not replay is skipped: `validate_task` reports it."""
    agents = AgentSet(policy=resolve("policy", REFUSAL_FLOOR), user=resolve("user", "scripted"))
    problems = []
    for task in tasks:
        try:
            expected = domain.replay(task)
        except ExpectedStateError:
            continue
        record = run_trial(
            TrialSpec(domain, task, 0, trial_seed(seed, domain.name, task.id, 0), agents, expected)
        )
        if record.passed:
            problems.append(
                f"{domain.name} task {task.id}: refusing everything passes it ({REFUSAL_FLOOR} scored "
                f"{record.reward:g} with no tool call): its grading checks nothing its request needs"
            )
    return problems


def validate_domain(domain: Domain) -> ValidationReport:
    """`castbench domains validate` of one domain: the replay checks of every task and of its data
    (`castbench_authoring.validate`), then the blanket-refusal floor on each task they found
    nothing wrong with. A task it passes is a problem, except in a published set
    (`Domain.requires_earned` False), whose tasks are graded as published: reported there."""
    report = replay_checks(domain)
    try:
        tasks = [task for split in domain.splits for task in domain.tasks(split)]
    except (TaskFileError, ValueError):
        return report  # its task files are reported already
    tasks = [task for task in tasks if not any(f"task {task.id}:" in line for line in report.problems)]
    wins = refusal_wins(domain, tasks)
    (report.problems if domain.requires_earned else report.refused).extend(wins)
    return report
