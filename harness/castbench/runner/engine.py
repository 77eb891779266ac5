"""The evaluation engine: the task x trial grid, bounded concurrency, a commit per trial, resume.

Expected states depend only on the task, so each is replayed once per run (τ-Bench replays and
hashes the database every trial: that is where most of its harness time goes).
"""

from __future__ import annotations

import os
import signal
import threading
import traceback
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError
from sqlalchemy.exc import SQLAlchemyError

from castbench.agents.conversation import Usage
from castbench.domain import Database, Domain, Task
from castbench.errors import FatalInfrastructureError, RunInterrupted
from castbench.runner.config import RunConfig
from castbench.runner.deadline import Cancelled, TimeLimits
from castbench.runner.plan import TrialJob, plan_trials, planned_trials
from castbench.runner.records import TrialRecord
from castbench.runner.rollout import AgentSet, run_trial
from castbench.runner.shared import DEFAULT_LEASE_S, SharedPlan
from castbench.store import HEARTBEAT_S, ResultsStore

__all__ = ["EvalOutcome", "ExpectedStates", "run_eval", "run_job", "superseded_run"]


@dataclass(frozen=True)
class EvalOutcome:
    run_id: str
    resumed: bool
    already_done: int
    ran: int
    total: int
    stopped: str | None = None
    """Why the run stopped before its last trial (re-running the same command resumes it)."""
    unscored: int = 0
    """Planned trials without a scored record at the end (infrastructure errors): the run is
    incomplete and its pass^k is not final."""
    superseded: str | None = None
    """A stored run with the same options that was not resumed because its code or data differ."""
    changes: tuple[str, ...] = ()
    """What differs from `superseded` (the policy's code, a domain's task files, ...)."""


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


def _harness_error(job: TrialJob, message: str) -> TrialRecord:
    """The record of a trial our own code failed: stored with its reason, never scored."""
    return TrialRecord(
        domain=job.domain.name,
        domain_version=job.domain.version,
        task_id=job.task.id,
        trial_index=job.trial_index,
        seed=job.seed,
        status="error",
        reward=None,
        end_reason="harness_error",
        opening="",
        error=message,
    )


@dataclass(frozen=True)
class _Runtime:
    """How trials run, beyond what decides their scores."""

    time_limits: TimeLimits
    stop: threading.Event
    max_attempts: int


def run_job(
    job: TrialJob,
    config: RunConfig,
    agents: AgentSet,
    expected: ExpectedStates,
    time_limits: TimeLimits | None = None,
    stop: threading.Event | None = None,
) -> TrialRecord:
    """One trial of the grid, once, under the run's limits, verification and traits."""
    return run_trial(
        job.domain,
        job.task,
        job.trial_index,
        job.seed,
        agents,
        expected.get(job.domain, job.task),
        config.limits,
        config.verification,
        config.traits,
        time_limits,
        stop,
        grading=config.grading_mode,
    )


def _run_with_retries(
    job: TrialJob, config: RunConfig, agents: AgentSet, expected: ExpectedStates, runtime: _Runtime
) -> TrialRecord:
    """Infrastructure errors restart the trial from scratch with the same seed. The record's
    usage counts every attempt: it is what the trial cost. A bug of ours in one trial is that
    trial's `harness_error`, never the run's end."""
    record = None
    spent: dict[str, Usage] = {}
    for attempt in range(1, runtime.max_attempts + 1):
        try:
            record = run_job(job, config, agents, expected, runtime.time_limits, runtime.stop)
        except (FatalInfrastructureError, Cancelled):
            raise
        except Exception as exc:
            return _harness_error(job, f"castbench failed in this trial: {exc!r}\n{traceback.format_exc()}")
        for role, usage in record.usage.items():
            spent[role] = spent.get(role, Usage()) + usage
        record = record.model_copy(update={"attempts": attempt, "usage": dict(spent)})
        if record.end_reason != "infra_error":
            break
    assert record is not None
    return record


@contextmanager
def _second_interrupt_exits() -> Iterator[None]:
    """While an interrupted run winds down, a second Ctrl-C exits at once (status 130). Trials
    are committed one transaction each, so nothing stored is lost; the run, left `running` with
    no live process, reads as interrupted."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda *_: os._exit(130))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _results(
    jobs: Iterable[TrialJob],
    work: Callable[[TrialJob], TrialRecord],
    concurrency: int,
    budget_spent: Callable[[], bool],
    halt: threading.Event,
) -> Generator[TrialRecord, None, None]:
    """Finished trials as they come; once `budget_spent()` is true no new trial starts (those
    running finish and are kept). On any exception (Ctrl-C among them) `halt` is set: running
    trials are abandoned at their next agent call and dropped, not stored half-done."""
    if concurrency <= 1:
        for job in jobs:
            if budget_spent():
                return
            yield work(job)
        return
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="trial")
    pending: set[Future[TrialRecord]] = set()
    queue = iter(jobs)
    try:
        for job in queue:
            pending.add(pool.submit(work, job))
            if len(pending) >= concurrency * 2:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
                following = None if budget_spent() else next(queue, None)
                if following is not None:
                    pending.add(pool.submit(work, following))
    except BaseException:
        halt.set()
        with _second_interrupt_exits():
            pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _key(job: TrialJob) -> tuple[str, str, int]:
    return (job.domain.name, job.task.id, job.trial_index)


def _cost(record: TrialRecord) -> float:
    return sum(usage.cost or 0.0 for usage in record.usage.values())


def superseded_run(store: ResultsStore, config: RunConfig) -> tuple[str, list[str]] | None:
    """The latest stored run with the same options but other code, data or castbench version,
    and what changed: why a re-run did not resume it."""
    digest, options = config.config_hash(), config.options_hash()
    rows = store.runs()
    if any(row.config_hash == digest for row in rows):
        return None
    for row in reversed(rows):
        try:
            before = RunConfig.model_validate_json(row.config_json)
        except ValidationError:
            continue
        if before.options_hash() == options:
            return row.id, config.fingerprint.changes(before.fingerprint)
    return None


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
    time_limits: TimeLimits | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_trial: Callable[[TrialRecord], None] | None = None,
    lease_s: float = DEFAULT_LEASE_S,
) -> EvalOutcome:
    """Run (or resume) the evaluation `config` describes; every trial is committed as it ends.

    `max_cost` (USD, this invocation's spending) stops starting trials once reached; a fatal
    provider error (bad credentials, unknown model, a server that is down) stops the run at once
    (`failed`); Ctrl-C stops it too (`interrupted`, raising `RunInterrupted`). Either way the
    finished trials stay stored and re-running resumes. `time_limits` bound each agent's time
    (a run-time setting, like `concurrency`: not part of the run's identity). On a shared store
    (Postgres) any number of processes may run this for one run at once: they split its trials
    through claims whose leases last `lease_s` seconds past a worker's last heartbeat
    (`castbench.runner.shared`)."""
    total = planned_trials(config)
    superseded = None if fresh else superseded_run(store, config)
    run_id, resumed = store.open_run(config, meta or {}, fresh=fresh)
    done = store.scored_keys(run_id) if resumed else set()
    already = min(len(done), total)
    todo = (job for job in plan_trials(config) if _key(job) not in done)  # lazy: 10^6 trials stay cheap
    if on_start is not None:
        on_start(already, total)
    expected = ExpectedStates()
    store.set_status(run_id, "running")
    runtime = _Runtime(time_limits or TimeLimits(), threading.Event(), max_attempts)

    def work(job: TrialJob) -> TrialRecord:
        return _run_with_retries(job, config, agents, expected, runtime)

    ran, spent = 0, 0.0

    def over_budget() -> bool:
        return max_cost is not None and spent >= max_cost

    active: list[Generator[TrialRecord, None, None]] = []

    def keep(
        results: Generator[TrialRecord, None, None], stored: Callable[[TrialRecord], None] | None
    ) -> None:
        nonlocal ran, spent
        active[:] = [results]
        for record in results:
            _store(store, run_id, record)
            if stored is not None:
                stored(record)
            ran += 1
            spent += _cost(record)
            if on_trial is not None:
                on_trial(record)

    unfinished = False
    try:
        with _held(store, run_id):
            if store.shared:
                with SharedPlan(store, run_id, list(todo), _key, lease_s) as plan:
                    while True:
                        keep(
                            _results(plan.claimed(), work, concurrency, over_budget, runtime.stop),
                            plan.finish,
                        )
                        unfinished = not plan.settled()
                        if not unfinished or over_budget():
                            break
                        plan.wait()
            else:
                keep(_results(todo, work, concurrency, over_budget, runtime.stop), None)
                unfinished = ran < total - already
    except (KeyboardInterrupt, Cancelled):
        with _second_interrupt_exits():
            runtime.stop.set()
            for results in active:
                results.close()
            store.set_status(run_id, "interrupted")
        raise RunInterrupted(run_id, already + ran, total) from None
    except BaseException:
        store.set_status(run_id, "failed")
        raise
    stopped = None
    if unfinished:
        not_run = total - already - ran
        stopped = f"cost limit reached: ${spent:.4f} spent of ${max_cost}; {not_run} trial(s) not run"
    unscored = total - min(total, len(store.scored_keys(run_id)))  # other workers' trials count too
    store.set_status(run_id, "stopped" if stopped else "incomplete" if unscored else "complete")
    superseded_id, changes = superseded or (None, [])
    return EvalOutcome(run_id, resumed, already, ran, total, stopped, unscored, superseded_id, tuple(changes))


@contextmanager
def _held(store: ResultsStore, run_id: str) -> Iterator[None]:
    """This process's lease on the run, renewed every `HEARTBEAT_S` while it runs, so that the
    stored `running` is only ever true while a live process runs it."""
    store.hold(run_id)
    done = threading.Event()

    def renew() -> None:
        while not done.wait(HEARTBEAT_S):
            with suppress(SQLAlchemyError):  # a missed beat only makes the run look stale sooner
                store.heartbeat(run_id)

    threading.Thread(target=renew, name=f"lease-{run_id}", daemon=True).start()
    try:
        yield
    finally:
        done.set()
        store.release(run_id)


def _store(store: ResultsStore, run_id: str, record: TrialRecord) -> None:
    """Commit one trial; a record that cannot be written as JSON (a value the rollout's checks
    missed) is stored as that trial's harness error instead of ending the run."""
    try:
        store.add_trial(run_id, record)
    except PydanticSerializationError as exc:
        lost: dict[str, object] = {"opening": "", "steps": [], "grade": None, "reward": None}
        unstorable = record.model_copy(
            update={
                **lost,
                "status": "error",
                "end_reason": "harness_error",
                "error": f"the trial's record could not be stored: {exc}",
            }
        )
        store.add_trial(run_id, unstorable)
