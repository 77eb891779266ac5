"""Reference floors: what refusing is worth on a run's own tasks, shown next to its pass^k.

Three built-in, unprivileged policies run through the same engine (`run_job`, the same grading)
on the run's domains, split, tasks, trials, seed, step limit and traits, with the scripted user
and no critic: `scripted:refuse` (refuses everything), `scripted:lookup-refuse` (looks things
up, then refuses) and `scripted:lookup-spray` (looks everything up, offers every change, then
states every rule of the policy and every value it saw: what a reviewer's task-blind agent does
to test whether replies are graded for what they claim). An agent that scores near a floor has
learned little beyond refusing; castbench's grading keeps the spray at or below lookup-refuse.

The policies are deterministic, and so is the scripted user without traits: then every trial of
a task is the same conversation, so one trial per task gives the task's pass^k for every k (all
n trials succeed or none does). With traits every trial runs.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache

from pydantic import BaseModel

from castbench.agents.registry import resolve
from castbench.metrics.passk import pass_hat_k
from castbench.runner.config import RunConfig
from castbench.runner.plan import plan_trials
from castbench.runner.rollout import AgentSet
from castbench.runner.work import ExpectedStates, run_job

__all__ = ["FLOOR_POLICIES", "ReferenceFloors", "reference_floors"]

FLOOR_POLICIES = {
    "refuse": "scripted:refuse",
    "lookup-refuse": "scripted:lookup-refuse",
    "lookup-spray": "scripted:lookup-spray",
}
"""Floor name -> the policy that sets it."""


class ReferenceFloors(BaseModel):
    """pass^k (k = 1..trials) of each floor policy, per domain and over all the run's tasks."""

    policies: dict[str, str] = dict(FLOOR_POLICIES)
    domains: dict[str, dict[str, dict[int, float]]]
    """domain -> floor name -> k -> pass^k."""
    overall: dict[str, dict[int, float]]


def _pass_hat(counts: list[tuple[int, int]], trials: int) -> dict[int, float]:
    return {k: sum(pass_hat_k(n, c, k) for n, c in counts) / len(counts) for k in range(1, trials + 1)}


@lru_cache(maxsize=32)
def _floors(canonical: str) -> ReferenceFloors:
    config = RunConfig.model_validate_json(canonical)
    repeats = 1 if not config.traits else config.trials
    jobs = [job for job in plan_trials(config) if job.trial_index < repeats]
    user = resolve("user", "scripted")
    expected = ExpectedStates()
    domains: dict[str, dict[str, dict[int, float]]] = defaultdict(dict)
    overall: dict[str, dict[int, float]] = {}
    for floor, spec in FLOOR_POLICIES.items():
        agents = AgentSet(policy=resolve("policy", spec), user=user)
        successes: dict[tuple[str, str], int] = defaultdict(int)
        for job in jobs:
            record = run_job(job, config, agents, expected)
            successes[(job.domain.name, job.task.id)] += record.passed * (config.trials // repeats)
        counts = {key: (config.trials, c) for key, c in successes.items()}
        for name in config.domains:
            mine = [pair for (domain, _), pair in counts.items() if domain == name]
            if mine:
                domains[name][floor] = _pass_hat(mine, config.trials)
        overall[floor] = _pass_hat(list(counts.values()), config.trials)
    return ReferenceFloors(domains=dict(domains), overall=overall)


def reference_floors(config: RunConfig) -> ReferenceFloors:
    """The floors on the tasks `config` runs (the same tasks, seeds, limits and traits)."""
    floor_config = config.model_copy(
        update={
            "policy": "scripted:refuse",
            "critic": "none",
            "user": "scripted",
            "privileged": [],
            "extra": {},
        }
    )
    return _floors(floor_config.model_dump_json())
