"""The evaluation engine: the task x trial grid, bounded concurrency, trials committed as they end
(grouped, `castbench._run.commits`), resume.

Expected states depend only on the task, so each is replayed once per run (τ-Bench replays and
hashes the database every trial: that is where most of its harness time goes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager, suppress

from pydantic import ValidationError

from castbench._base import lossless
from castbench._base.defaults import DEFAULT_LEASE_S
from castbench._base.errors import FatalInfrastructureError, RunInterrupted
from castbench._records.config import RunConfig, read_config
from castbench._records.execution import ExecutionPlan
from castbench._records.journal import Journal
from castbench._records.migrations import RecordVersionError
from castbench._records.store import HEARTBEAT_S, ResultsStore, StoreError
from castbench._records.trial import TrialRecord
from castbench._run.broken_agent import BrokenAgentWatch
from castbench._run.collector import tuned_for_a_run
from castbench._run.commits import Commits
from castbench._run.executors import Executor
from castbench._run.executors.local import LocalExecutor, second_interrupt_exits
from castbench._run.outcome import EvalOutcome
from castbench._run.plan import TrialJob, plan_trials, planned_trials
from castbench._run.shared import SharedPlan
from castbench._run.work import TrialWork
from castbench._trial.deadline import Cancelled, Halt, TimeLimits
from castbench._trial.execution import plan_execution
from castbench._trial.rollout import AgentSet

__all__ = ["EvalOutcome", "run_eval", "superseded_run"]


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
            before = read_config(row.config_json, f"run {row.id}")
        except (ValidationError, RecordVersionError):  # not comparable: not the run superseded
            continue
        if before.options_hash() == options:
            return row.id, config.fingerprint.changes(before.fingerprint) + config.placement_changes(before)
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
    executor: Executor | None = None,
    plan: ExecutionPlan | None = None,
    on_stored: Callable[[TrialRecord], None] | None = None,
) -> EvalOutcome:
    """Run (or resume) the evaluation `config` describes; every trial is committed as it ends
    (those that end together in one transaction, `castbench._run.commits`; on a shared store
    one by one, each before its claim is released).

    `max_cost` (USD, this invocation's spending) stops starting trials once reached; a fatal
    provider error (bad credentials, unknown model, a server that is down) stops the run at once
    (`failed`); Ctrl-C stops it too (`interrupted`, raising `RunInterrupted`). Either way the
    finished trials stay stored and re-running resumes. `time_limits` bound each agent's time
    (a run-time setting, like `concurrency`: not part of the run's identity). On a shared store
    (Postgres) any number of processes may run this for one run at once: they split its trials
    through claims whose leases last `lease_s` seconds past a worker's last heartbeat
    (`castbench._run.shared`). `executor` runs the trials (`castbench._run.executors`: this
    process by default, or a Ray cluster); this process commits every record. `plan` is how
    (`castbench._trial.execution`), worked out here from the executor, `concurrency` and the
    store when not given; a new run records it in its meta (`execution`)."""
    executor = executor or LocalExecutor()
    plan = plan or plan_execution(agents, executor.name, concurrency, store.shared)
    total = planned_trials(config)
    superseded = None if fresh else superseded_run(store, config)
    meta = {**(meta or {}), "execution": plan.model_dump(mode="json")}
    run_id, resumed = store.open_run(config, meta, fresh=fresh)
    done = store.scored_keys(run_id) if resumed else set()
    already = min(len(done), total)
    journal = Journal(store.url, run_id)  # trials started and never stored count on resume
    todo = (job for job in plan_trials(config) if _key(job) not in done)  # lazy: 10^6 trials stay cheap
    if on_start is not None:
        on_start(already, total)
    store.set_status(run_id, "running")
    work = TrialWork(config, agents, plan, time_limits or TimeLimits(), max_attempts)
    halt = Halt()
    keeper = _Keeper(store, run_id, journal, plan, max_cost, on_trial, on_stored)
    try:
        unfinished = keeper.run(executor, work, todo, halt, lease_s, total - already)
    except (KeyboardInterrupt, Cancelled):
        with second_interrupt_exits():
            keeper.interrupted(halt)
        raise RunInterrupted(run_id, already + keeper.ran, total) from None
    except FatalInfrastructureError as exc:
        keeper.failed(exc)
        raise
    except BaseException:
        _close_quietly(keeper.commits)
        store.set_status(run_id, "failed")
        raise
    journal.abandon()  # a cost limit or a broken agent stopped the rest: castbench's decision
    journal.close()
    stopped = keeper.stopped(total - already - keeper.ran) if unfinished else None
    unscored = total - min(total, len(store.scored_keys(run_id)))  # other workers' trials count too
    store.set_status(run_id, "stopped" if stopped else "incomplete" if unscored else "complete")
    superseded_id, changes = superseded or (None, [])
    return EvalOutcome(
        run_id,
        resumed,
        already,
        keeper.ran,
        total,
        stopped,
        unscored,
        superseded_id,
        tuple(changes),
        keeper.watch.broken,
    )


class _Keeper:
    """This invocation's side of a run: it hands the executor the trials to start (each
    journaled as started), keeps each record as it comes back (committed, charged, watched for a
    broken agent, reported), and counts what ran and what it cost."""

    def __init__(
        self,
        store: ResultsStore,
        run_id: str,
        journal: Journal,
        plan: ExecutionPlan,
        max_cost: float | None,
        on_trial: Callable[[TrialRecord], None] | None,
        on_stored: Callable[[TrialRecord], None] | None,
    ) -> None:
        self.store, self.run_id, self.journal, self.plan = store, run_id, journal, plan
        self.max_cost, self.on_trial, self.on_stored = max_cost, on_trial, on_stored
        self.ran, self.spent = 0, 0.0
        self.watch = BrokenAgentWatch()
        self.active: list[Generator[TrialRecord, None, None]] = []
        self.commits = None if plan.shared else Commits(store, run_id, _unwritable, self.kept_record)

    def stop_starting(self) -> bool:
        return self.watch.stop or (self.max_cost is not None and self.spent >= self.max_cost)

    def run(
        self,
        executor: Executor,
        work: TrialWork,
        todo: Iterable[TrialJob],
        halt: Halt,
        lease_s: float,
        to_run: int,
    ) -> bool:
        """Run the trials `todo` holds (on a shared store, the ones this process claims); True
        when some were left unrun (this invocation stopped starting them)."""
        concurrency = self.plan.concurrency
        unfinished = False
        with _held(self.store, self.run_id), tuned_for_a_run():
            if self.plan.shared:
                with SharedPlan(self.store, self.run_id, list(todo), _key, lease_s) as leases:
                    while True:
                        jobs = self.journaled(leases.claimed())
                        self.keep(
                            executor.results(jobs, work, concurrency, self.stop_starting, halt), leases.finish
                        )
                        unfinished = not leases.settled()
                        if not unfinished or self.stop_starting():
                            break
                        leases.wait()
            else:
                jobs = self.journaled(todo)
                self.keep(executor.results(jobs, work, concurrency, self.stop_starting, halt), None)
                unfinished = self.ran < to_run
            if self.commits is not None:
                self.commits.close()
        return unfinished

    def journaled(self, jobs: Iterable[TrialJob]) -> Iterator[TrialJob]:
        for job in jobs:
            self.journal.started(_key(job))
            yield job

    def kept_record(self, record: TrialRecord) -> None:
        self.journal.stored(record)
        if self.on_stored is not None:
            self.on_stored(record)

    def keep(
        self, results: Generator[TrialRecord, None, None], stored: Callable[[TrialRecord], None] | None
    ) -> None:
        self.active[:] = [results]
        for record in results:
            record = self.journal.charge(record)
            if self.commits is not None:
                self.commits.add(record)
            else:
                kept = _store(self.store, self.run_id, record)
                if kept is not None:
                    self.kept_record(kept)
            if stored is not None:
                stored(record)
            self.ran += 1
            self.spent += _cost(record)
            self.watch.see(record)
            if self.on_trial is not None:
                self.on_trial(record)

    def interrupted(self, halt: Halt) -> None:
        """Ctrl-C: the trials in flight stop, those finished so far are stored."""
        halt.set()
        for results in self.active:
            results.close()
        _close_quietly(self.commits)  # the trials finished so far are stored
        self.journal.abandon()  # castbench stopped them itself: replayed, not charged
        self.journal.close()
        self.store.set_status(self.run_id, "interrupted")

    def failed(self, exc: FatalInfrastructureError) -> None:
        """A fatal provider error ends the run: the trial it stopped is stored on the record."""
        _close_quietly(self.commits)
        if isinstance(exc.stopped, TrialRecord):  # on the record: a re-run's retry shows as one
            stopped_record = _store(self.store, self.run_id, self.journal.charge(exc.stopped))
            if stopped_record is not None:
                self.journal.stored(stopped_record)
        self.journal.abandon()
        self.journal.close()
        self.store.set_status(self.run_id, "failed")

    def stopped(self, not_run: int) -> str:
        """Why this invocation stopped starting trials, `not_run` of them left."""
        if self.watch.stop:
            return f"the agent failed its first {self.ran} trials the same way; {not_run} trial(s) not run"
        return f"cost limit reached: ${self.spent:.4f} spent of ${self.max_cost}; {not_run} trial(s) not run"


@contextmanager
def _held(store: ResultsStore, run_id: str) -> Iterator[None]:
    """This process's lease on the run, renewed every `HEARTBEAT_S` while it runs, so that the
    stored `running` is only ever true while a live process runs it."""
    store.hold(run_id)
    done = threading.Event()

    def renew() -> None:
        while not done.wait(HEARTBEAT_S):
            with suppress(StoreError):  # a missed beat only makes the run look stale sooner
                store.heartbeat(run_id)

    threading.Thread(target=renew, name=f"lease-{run_id}", daemon=True).start()
    try:
        yield
    finally:
        done.set()
        store.release(run_id)


def _close_quietly(commits: Commits | None) -> None:
    """Commit what was handed over while another error ends the run: that error is the one to
    raise (a store error of the writer's is already the run's end, `failed`)."""
    if commits is not None:
        with suppress(Exception):
            commits.close()


def _store(store: ResultsStore, run_id: str, record: TrialRecord) -> TrialRecord | None:
    """Commit one trial; returns it as stored (None: a scored copy was there). The store writes
    any record losslessly (`castbench._base.lossless`), and the rollout checks every agent output before
    it is used; a record that still cannot be written is stored without its trajectory instead of
    ending the run (`_unwritable`)."""
    return store.add_trials(run_id, [record], _unwritable)[0]


def _unwritable(record: TrialRecord, exc: Exception) -> TrialRecord:
    """The record to store for one that cannot be written: as its agent's failure (scored 0) when
    an agent's output is what cannot be written (an in-process agent that changed what it
    returned after the check), otherwise as castbench's own (a harness error)."""
    return _unstorable(record, (str(exc).splitlines() or [type(exc).__name__])[0])


def _unstorable(record: TrialRecord, reason: str) -> TrialRecord:
    lost: dict[str, object] = {"opening": "", "steps": [], "grade": None}
    culprit = _unstorable_output(record)
    if culprit is not None:
        return record.model_copy(
            update={**lost, "status": "scored", "reward": 0.0, "end_reason": "agent_error", "error": culprit}
        )
    return record.model_copy(
        update={
            **lost,
            "status": "error",
            "reward": None,
            "end_reason": "harness_error",
            "error": f"the trial's record could not be stored: {reason}",
        }
    )


def _unstorable_output(record: TrialRecord) -> str | None:
    """Which agent output of the trial cannot be stored, and why; None when all can."""
    for step in record.steps:
        for proposal in step.proposals:
            for role, output in (("policy", proposal.action), ("critic", proposal.verdict)):
                problem = None if output is None else lossless.problem(output)
                if problem is not None:
                    return f"the {role}'s output at step {step.index} cannot be stored ({problem})"
    return None
