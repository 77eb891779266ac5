"""The evaluation engine: the task x trial grid, bounded concurrency, a commit per trial, resume.

Expected states depend only on the task, so each is replayed once per run (τ-Bench replays and
hashes the database every trial: that is where most of its harness time goes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from castbench.agents.conversation import Usage
from castbench.domain import Database, Domain, Task, TaskFileError, load_domain
from castbench.errors import FatalInfrastructureError
from castbench.runner.config import RunConfig
from castbench.runner.records import TrialRecord
from castbench.runner.rollout import AgentSet, run_trial
from castbench.runner.seeds import trial_seed
from castbench.store import ResultsStore

__all__ = ["EvalOutcome", "TrialJob", "plan_trials", "run_eval", "select_tasks"]


@dataclass(frozen=True)
class TrialJob:
    domain: Domain
    task: Task
    trial_index: int
    seed: int


@dataclass(frozen=True)
class EvalOutcome:
    run_id: str
    resumed: bool
    already_done: int
    ran: int
    total: int
    stopped: str | None = None
    """Why the run stopped before its last trial (re-running the same command resumes it)."""


class ExpectedStates:
    """Expected state per task, replayed once and shared read-only by every trial."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], Database] = {}
        self._lock = threading.Lock()

    def get(self, domain: Domain, task: Task) -> Database:
        key = (domain.name, task.id)
        with self._lock:
            if key not in self._cache:
                self._cache[key] = domain.replay(task)
            return self._cache[key]


def select_tasks(domain: Domain, split: str, task_ids: list[str] | None) -> list[Task]:
    """The split's tasks, or those of them named in `task_ids` (ids of other domains ignored)."""
    tasks = domain.tasks(split)
    if not task_ids:
        return tasks
    wanted = set(task_ids)
    return [task for task in tasks if task.id in wanted]


def plan_trials(config: RunConfig) -> list[TrialJob]:
    jobs = []
    for name in config.domains:
        domain = load_domain(name)
        for task in select_tasks(domain, config.split, config.task_ids):
            for index in range(config.trials):
                jobs.append(TrialJob(domain, task, index, trial_seed(config.seed, name, task.id, index)))
    if config.task_ids:
        found = {job.task.id for job in jobs}
        missing = sorted(set(config.task_ids) - found)
        if missing:
            raise TaskFileError(f"unknown task id(s) in split {config.split}: {', '.join(missing)}")
    return jobs


def _run_with_retries(
    job: TrialJob, config: RunConfig, agents: AgentSet, expected: ExpectedStates, max_attempts: int
) -> TrialRecord:
    """Infrastructure errors restart the trial from scratch with the same seed. The record's
    usage counts every attempt: it is what the trial cost."""
    record = None
    spent: dict[str, Usage] = {}
    for attempt in range(1, max_attempts + 1):
        record = run_trial(
            job.domain,
            job.task,
            job.trial_index,
            job.seed,
            agents,
            expected.get(job.domain, job.task),
            config.limits,
            config.verification,
            config.traits,
        )
        for role, usage in record.usage.items():
            spent[role] = spent.get(role, Usage()) + usage
        record = record.model_copy(update={"attempts": attempt, "usage": dict(spent)})
        if record.end_reason != "infra_error":
            break
    assert record is not None
    return record


def _results(
    jobs: list[TrialJob], work: Callable[[TrialJob], TrialRecord], concurrency: int, stop: Callable[[], bool]
) -> Iterator[TrialRecord]:
    """Finished trials as they come; once `stop()` is true no new trial starts (those running
    finish and are kept)."""
    if concurrency <= 1:
        for job in jobs:
            if stop():
                return
            yield work(job)
        return
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="trial") as pool:
        pending: set[Future[TrialRecord]] = set()
        queue = iter(jobs)
        for job in queue:
            pending.add(pool.submit(work, job))
            if len(pending) >= concurrency * 2:
                break
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
                    following = None if stop() else next(queue, None)
                    if following is not None:
                        pending.add(pool.submit(work, following))
        except BaseException:
            for future in pending:
                future.cancel()
            raise


def _cost(record: TrialRecord) -> float:
    return sum(usage.cost or 0.0 for usage in record.usage.values())


def run_eval(
    config: RunConfig,
    agents: AgentSet,
    store: ResultsStore,
    *,
    meta: dict[str, object] | None = None,
    concurrency: int = 1,
    fresh: bool = False,
    max_attempts: int = 3,
    max_cost: float | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_trial: Callable[[TrialRecord], None] | None = None,
) -> EvalOutcome:
    """Run (or resume) the evaluation `config` describes; every trial is committed as it ends.

    `max_cost` (USD, this invocation's spending) stops starting trials once reached; a fatal
    provider error (bad credentials, unknown model) stops the run at once. Either way the
    finished trials stay stored and re-running resumes."""
    jobs = plan_trials(config)
    run_id, resumed = store.open_run(config, meta or {}, fresh=fresh)
    done = store.scored_keys(run_id) if resumed else set()
    todo = [job for job in jobs if (job.domain.name, job.task.id, job.trial_index) not in done]
    if on_start is not None:
        on_start(len(jobs) - len(todo), len(jobs))
    expected = ExpectedStates()
    store.set_status(run_id, "running")

    def work(job: TrialJob) -> TrialRecord:
        return _run_with_retries(job, config, agents, expected, max_attempts)

    ran, spent = 0, 0.0

    def over_budget() -> bool:
        return max_cost is not None and spent >= max_cost

    try:
        for record in _results(todo, work, concurrency, over_budget):
            store.add_trial(run_id, record)
            ran += 1
            spent += _cost(record)
            if on_trial is not None:
                on_trial(record)
    except FatalInfrastructureError:
        store.set_status(run_id, "failed")
        raise
    stopped = None
    if ran < len(todo):
        stopped = f"cost limit reached: ${spent:.4f} spent of ${max_cost}; {len(todo) - ran} trial(s) not run"
    store.set_status(run_id, "stopped" if stopped else "complete")
    return EvalOutcome(run_id, resumed, len(jobs) - len(todo), ran, len(jobs), stopped)
