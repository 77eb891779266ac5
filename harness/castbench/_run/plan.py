"""What a run covers: the tasks it plans (fixed when the run is configured and stored with it) and
the task x trial grid, produced lazily.

The planned task list is part of the run's record so that pass^k can be taken over every task the
run set out to do, a task with no stored trial included. The grid runs round by round (trial 0
of every task, then trial 1, ...): with two tasks or more, no task's trials run back to back.
It is an iterator: `--trials 1000000` must not build a million jobs before the first trial starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from castbench._domain.domain import Domain
from castbench._domain.registry import load_domain
from castbench._domain.task import Task, TaskFileError
from castbench._records.config import RunConfig
from castbench._trial.seeds import trial_seed

__all__ = ["TrialJob", "plan_tasks", "plan_trials", "planned_trials", "select_tasks"]


@dataclass(frozen=True)
class TrialJob:
    domain: Domain
    task: Task
    trial_index: int
    seed: int


def select_tasks(domain: Domain, split: str, task_ids: list[str] | None) -> list[Task]:
    """The split's tasks, or those of them named in `task_ids` (ids of other domains ignored)."""
    tasks = domain.tasks(split)
    if not task_ids:
        return tasks
    wanted = set(task_ids)
    return [task for task in tasks if task.id in wanted]


def plan_tasks(domains: Iterable[Domain], split: str, task_ids: list[str] | None) -> dict[str, list[str]]:
    """Domain name -> the ids of the tasks a run will do, in split order. Unknown ids are refused."""
    planned = {domain.name: [task.id for task in select_tasks(domain, split, task_ids)] for domain in domains}
    if task_ids:
        found = {task_id for ids in planned.values() for task_id in ids}
        missing = sorted(set(task_ids) - found)
        if missing:
            raise TaskFileError(f"unknown task id(s) in split {split}: {', '.join(missing)}")
    return planned


def _planned(config: RunConfig) -> dict[str, list[str]]:
    """The stored plan; runs configured before plans were stored are planned afresh."""
    if config.planned_tasks:
        return config.planned_tasks
    return plan_tasks((load_domain(name) for name in config.domains), config.split, config.task_ids)


def planned_trials(config: RunConfig) -> int:
    return sum(len(ids) for ids in _planned(config).values()) * config.trials


def plan_trials(config: RunConfig) -> Iterator[TrialJob]:
    """Every (task, trial) of the run, one at a time, round by round: trial 0 of every task, then
    trial 1 of every task, and so on. Trials of one task never run back to back, so an agent (or
    an agent service, whose memory castbench cannot reach) that keys anything to "the previous
    trial" gains nothing from it; each trial's seed is its own, so the order changes no result."""
    tasks: list[tuple[Domain, Task]] = []
    for name, task_ids in _planned(config).items():
        domain = load_domain(name)
        found = {task.id: task for task in domain.tasks(config.split)}
        for task_id in task_ids:
            task = found.get(task_id)
            if task is None:
                raise TaskFileError(
                    f"domain {name}: planned task {task_id} is no longer in split {config.split}"
                )
            tasks.append((domain, task))
    for index in range(config.trials):
        for domain, task in tasks:
            yield TrialJob(domain, task, index, trial_seed(config.seed, domain.name, task.id, index))
