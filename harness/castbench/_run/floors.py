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

Floors depend on the tasks and how they are run, never on the agent evaluated: they are kept
under a digest of the floor run's options (the domains' versions and task files, the tasks, seed,
trials, limits and traits) and of castbench's and the domains' code, in the store given
(`ResultsStore.cache`) and in castbench's per-user state folder (`floors/<digest>.json`,
`castbench._base.places.state_dir`, out of every agent's reach), so a resume, another agent on the same
tasks, or a run on a new store of the same domain version reads them back instead of playing the
floor policies again: in `bench/whole_command_latency.py`, each level a fresh store, that was
0.4 s of CPU per 128 tasks taken from the trials. A changed task, option or line of code is a new
digest, never a stale figure; the values read are the values computed.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import defaultdict
from concurrent.futures import Future
from contextlib import suppress
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from castbench._base.places import state_dir
from castbench._records.config import RunConfig
from castbench._records.metrics.passk import pass_hat_k, reported_ks
from castbench._results.report.digest import code_digest
from castbench._results.report.summary import FLOOR_POLICIES, ReferenceFloors

if TYPE_CHECKING:  # the engine loads when floors are played, not when kept ones are read (#59)
    from castbench._records.store import ResultsStore

__all__ = ["FLOOR_POLICIES", "ReferenceFloors", "reference_floors", "start_reference_floors"]


def _pass_hat(counts: list[tuple[int, int]], trials: int) -> dict[int, float]:
    return {k: sum(pass_hat_k(n, c, k) for n, c in counts) / len(counts) for k in reported_ks(trials)}


@lru_cache(maxsize=32)
def _floors(canonical: str) -> ReferenceFloors:
    from castbench._agents.registry import resolve
    from castbench._run.plan import plan_trials
    from castbench._run.work import ExpectedStates, run_job
    from castbench._trial.rollout import AgentSet

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
            record = run_job(job, config, agents, expected, labelled=False)  # plain pass^k alone
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
    from and kept in `store` when one is given (those `start_reference_floors` began: awaited)."""
    canonical = _canonical(config)
    with _AHEAD_LOCK:
        ahead = _AHEAD.pop((canonical, store.url if store else None), None)
    return ahead.result() if ahead is not None else _cached_floors(canonical, config, store)


_AHEAD: dict[tuple[str, str | None], Future[ReferenceFloors]] = {}
_AHEAD_LOCK = threading.Lock()


def start_reference_floors(config: RunConfig, store: ResultsStore | None = None) -> None:
    """Begin the floors `reference_floors` will be asked for, in a thread of this process, while
    the run's trials go on: a run waiting on a model server leaves the CPU idle, and the user no
    longer waits for the floors after the last trial (`bench/whole_command_latency.py`). A
    thread, never a forked child: a child's writes left a SQLite store malformed when the parent
    was killed (35f1fcd)."""
    canonical = _canonical(config)
    key = (canonical, store.url if store else None)
    with _AHEAD_LOCK:
        if key in _AHEAD:
            return
        ahead: Future[ReferenceFloors] = Future()
        _AHEAD[key] = ahead

    def compute() -> None:
        try:
            ahead.set_result(_cached_floors(canonical, config, store))
        except BaseException as exc:  # handed to whoever asks: the same error, raised there
            ahead.set_exception(exc)

    threading.Thread(target=compute, name="castbench-floors", daemon=True).start()


def _canonical(config: RunConfig) -> str:
    """The floor run's options: the run's, less everything about the agent it evaluates."""
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
    return floor_config.model_dump_json()


def _key(canonical: str, config: RunConfig) -> str:
    digest = hashlib.sha256(f"{canonical}\n{code_digest(tuple(config.domains))}".encode())
    return f"floors:{digest.hexdigest()}"


def _cached_floors(canonical: str, config: RunConfig, store: ResultsStore | None) -> ReferenceFloors:
    key = _key(canonical, config)
    kept = None if store is None else store.cached(key)
    if kept is not None:
        return ReferenceFloors.model_validate_json(kept)
    floors = _kept_on_this_machine(key)
    if floors is None:
        floors = _floors(canonical)
        _keep_on_this_machine(key, floors)
    if store is not None:
        store.cache(key, "floors", floors.model_dump_json())
    return floors


def _file(key: str) -> Path:
    return state_dir() / "floors" / f"{key.removeprefix('floors:')}.json"


def _kept_on_this_machine(key: str) -> ReferenceFloors | None:
    """The floors kept under `key` in the state folder; None when absent or unreadable (a file
    cut short, hand-edited: computed again and rewritten)."""
    try:
        return ReferenceFloors.model_validate_json(_file(key).read_bytes())
    except (OSError, ValueError):
        return None


def _keep_on_this_machine(key: str, floors: ReferenceFloors) -> None:
    """Best effort, whole or not at all (written aside, then renamed): a state folder that cannot
    be written only means the next run computes them again."""
    path = _file(key)
    with suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        aside = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        aside.write_text(floors.model_dump_json())
        os.replace(aside, path)
