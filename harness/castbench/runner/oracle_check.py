"""The oracle policy on a set of tasks: one trial each, which must score 1.0. A task it cannot
solve has a ground truth no agent can reach through the conversation (`domains validate
--tasks-file` checks a private split with it)."""

from __future__ import annotations

from collections.abc import Sequence

from castbench.agents.registry import resolve
from castbench.domain import Domain, Task
from castbench.runner.rollout import AgentSet, run_trial
from castbench.runner.seeds import trial_seed

__all__ = ["oracle_failures"]


def oracle_failures(domain: Domain, tasks: Sequence[Task], seed: int = 0) -> list[str]:
    """Each task the oracle (with the scripted user) does not solve, with how its trial ended."""
    agents = AgentSet(policy=resolve("policy", "oracle"), user=resolve("user", "scripted"))
    problems = []
    for task in tasks:
        record = run_trial(
            domain, task, 0, trial_seed(seed, domain.name, task.id, 0), agents, domain.replay(task)
        )
        if not record.passed:
            problems.append(
                f"{domain.name} task {task.id}: the oracle scored {record.reward} ({record.end_reason})"
            )
    return problems
