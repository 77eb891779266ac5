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

Floors depend on the tasks and how they are run, never on the agent evaluated: given a store they
are kept there (`ResultsStore.cache`) under a digest of the floor run's options and of castbench's
and the domains' code, so a resume, or another agent on the same tasks, reads them back.
"""

from __future__ import annotations

import hashlib
import inspect
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel

import castbench
from castbench.agents.registry import resolve
from castbench.domain import load_domain
from castbench.metrics.passk import pass_hat_k
from castbench.runner.config import RunConfig
from castbench.runner.plan import plan_trials
from castbench.runner.rollout import AgentSet
from castbench.runner.work import ExpectedStates, run_job
from castbench.store import ResultsStore

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


def reference_floors(config: RunConfig, store: ResultsStore | None = None) -> ReferenceFloors:
    """The floors on the tasks `config` runs (the same tasks, seeds, limits and traits); read
    from and kept in `store` when one is given."""
    floor_config = config.model_copy(
        update={
            "policy": "scripted:refuse",
            "critic": "none",
            "user": "scripted",
            "privileged": [],
            "in_process": [],
            "placement": {},
            "extra": {},
            "fingerprint": config.fingerprint.model_copy(update={"agents": {}}),
        }
    )
    canonical = floor_config.model_dump_json()
    if store is None:
        return _floors(canonical)
    digest = hashlib.sha256(f"{canonical}\n{_code_digest(tuple(config.domains))}".encode())
    key = f"floors:{digest.hexdigest()}"
    kept = store.cached(key)
    if kept is not None:
        return ReferenceFloors.model_validate_json(kept)
    floors = _floors(canonical)
    store.cache(key, "floors", floors.model_dump_json())
    return floors


@lru_cache(maxsize=8)
def _code_digest(domains: tuple[str, ...]) -> str:
    """castbench's own source and that of each domain's package: the floor policies, the tools
    and the grading are code, and a changed line must not read back floors it would change."""
    roots = {Path(castbench.__file__).parent}
    for name in domains:
        domain = load_domain(name)
        roots |= {domain.root, Path(inspect.getfile(type(domain))).parent}
    hasher = hashlib.sha256()
    for root in sorted(roots):
        for path in sorted(root.rglob("*.py")):
            hasher.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return hasher.hexdigest()
