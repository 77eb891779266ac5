"""A run's trials in several processes of this machine: every core busy on one run.

One interpreter drives about a thousand model calls a second at most (about 1 ms of CPU per call
under the GIL, `bench/model_path.py`): at `--concurrency 512` against a server answering in 0.5 s
one process needs a whole core and the run falls behind the server (36% of the ideal throughput
measured on one process, issue 59). The execution plan (`castbench._trial.execution`) then splits
the run's trials over `ExecutionPlan.processes` child processes, each keeping its share of the
trials in flight exactly as the local executor keeps them in one process (greenlets on its own
model loop, or a thread per trial).

This process stays the run's only store writer: it hands each child its trials as small keys
(domain, task id, trial index, seed), at most twice the child's share outstanding, and yields the
records the children send back (pickled: same machine, same code), so that the engine commits,
journals, charges and shows them as it does for one process. Run ids, seeds, records and every
figure are those of a one-process run; only timings and the recorded execution plan differ.

Children are started fresh (`spawn`: this process already runs threads, which a `fork` would copy
half-held); each imports castbench, loads its domains by name and unpickles the run's `TrialWork`
(its agents' specs, so each trial builds its agents in the child as it would here). A model's
`max_concurrency` is split between the children like `--concurrency`, so a server never sees more
calls in flight than it would from one process. Children ignore Ctrl-C: this process gets it,
stops them and abandons their trials in flight (the journal marks those, the finished ones are
committed). A child that dies (killed, out of memory) leaves its outstanding trials as
`infra_error` records, unscored, which a re-run plays again; a child that cannot start (a domain
this machine cannot load as the run has it) ends the run with one `error:` line.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import signal
import threading
import traceback
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from functools import cache
from multiprocessing.connection import Connection, wait
from queue import SimpleQueue
from typing import Any

from castbench._agents.models.resolve import model_factory
from castbench._agents.registry import AgentSpec, Role
from castbench._base.errors import FatalInfrastructureError
from castbench._domain.domain import Domain
from castbench._domain.registry import load_domain
from castbench._records.trial import TrialRecord
from castbench._run.collector import tuned_for_a_run
from castbench._run.executors.pools import trial_pool
from castbench._run.plan import TrialJob
from castbench._run.work import ExpectedStates, TrialWork, failed_record
from castbench._trial.deadline import Cancelled, Halt
from castbench._trial.rollout import AgentSet

__all__ = ["STOP_S", "TrialKey", "child_payloads", "run_in_processes", "shares"]

log = logging.getLogger(__name__)

STOP_S = 5.0
"""Seconds a child has to exit once told to (the run ended or stopped) before it is killed."""


@dataclass(frozen=True)
class TrialKey:
    """A trial as it travels to a child: the rest is rebuilt there."""

    domain: str
    task_id: str
    trial_index: int
    seed: int

    @classmethod
    def of(cls, job: TrialJob) -> TrialKey:
        return cls(job.domain.name, job.task.id, job.trial_index, job.seed)


def shares(concurrency: int, processes: int) -> list[int]:
    """`concurrency` split over `processes` (fewer when there are fewer trials in flight than
    processes): each child's trials in flight, the first ones one more where it does not divide."""
    count = max(1, min(processes, concurrency))
    base, extra = divmod(max(1, concurrency), count)
    return [base + (1 if index < extra else 0) for index in range(count)]


@dataclass(frozen=True)
class _ModelAgent:
    """A model agent's factory as it travels to a child (`model_factory`'s is a closure)."""

    role: Role

    def __call__(self, briefing: Any, **params: Any) -> Any:
        return model_factory(self.role)(briefing, **params)


def _portable(spec: AgentSpec | None, share: int, concurrency: int) -> AgentSpec | None:
    """`spec` as a child gets it: its model's `max_concurrency` cut to the child's part of it,
    a model agent's factory one that pickles."""
    if spec is None:
        return None
    params = spec.params
    if "max_concurrency" in params:
        limit = int(params["max_concurrency"])
        params = {**params, "max_concurrency": max(1, -(-limit * share // max(1, concurrency)))}
    factory = _ModelAgent(spec.role) if spec.factory is model_factory(spec.role) else spec.factory
    return replace(spec, params=params, factory=factory)


def child_payloads(work: TrialWork, concurrency: int, processes: int) -> list[tuple[int, bytes]] | str:
    """Each child's share of `concurrency` and its `TrialWork`, pickled; or why the run's work
    cannot travel to another process (an agent factory that does not pickle: a closure or a
    class defined inside a function), in one line."""
    agents = work.agents
    payloads = []
    for share in shares(concurrency, processes):
        portable = AgentSet(
            _portable(agents.policy, share, concurrency),
            _portable(agents.user, share, concurrency) or agents.user,
            _portable(agents.critic, share, concurrency),
        )
        try:
            payloads.append((share, pickle.dumps(replace(work, agents=portable))))
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            return (str(exc).splitlines() or [type(exc).__name__])[0]
    return payloads


# ---------------------------------------------------------------------------------------- the child


@cache
def _domain(name: str) -> Domain:
    return load_domain(name)


def _job(work: TrialWork, key: TrialKey) -> TrialJob:
    domain = _domain(key.domain)
    wanted = work.config.domains.get(key.domain)
    if wanted is not None and domain.version != wanted:
        raise FatalInfrastructureError(
            f"a trial process loaded domain {key.domain} {domain.version}, but the run is on {wanted}"
        )
    return TrialJob(domain, domain.task(key.task_id), key.trial_index, key.seed)


def serve_trials(conn: Connection, payload: bytes, share: int) -> None:
    """A child's life: trials from `conn` run `share` at once, their records sent back in the
    batches they finish in, until this process is told to stop (None) and its trials are done."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent owns Ctrl-C
    work: TrialWork = pickle.loads(payload)
    events: SimpleQueue[Any] = SimpleQueue()
    halt = Halt()

    def read() -> None:
        try:
            while True:
                message = conn.recv()
                events.put(message)
                if message is None:
                    return
        except (EOFError, OSError):  # the parent is gone: stop
            halt.set()
            events.put(None)

    threading.Thread(target=read, name="trial-keys", daemon=True).start()
    expected = ExpectedStates()
    pool = trial_pool(work.plan.pool, share)
    in_flight, ending = 0, False
    with tuned_for_a_run():
        while not (ending and in_flight == 0):
            event = events.get()
            batch = [event]
            while not events.empty():
                batch.append(events.get())
            records: list[TrialRecord] = []
            for item in batch:
                if item is None:
                    ending = True
                elif isinstance(item, list):
                    for key in item:
                        job = _job(work, key)
                        pool.submit(work.run, job, expected, halt).add_done_callback(events.put)
                        in_flight += 1
                else:
                    in_flight -= 1
                    record = _finished(item)
                    if record is not None:
                        records.append(record)
            if records:
                conn.send(("records", records))
            if halt.is_set():
                break
    pool.shutdown(cancel=halt.is_set())


def _finished(future: Future[TrialRecord]) -> TrialRecord | None:
    try:
        return future.result()
    except Cancelled:
        return None


def child_main(conn: Connection, payload: bytes, share: int) -> None:
    """The child process's entry: any error ends it with one message to the parent, the
    record of a trial a fatal provider error stopped included. Done, it exits at once: the
    interpreter's teardown would walk the heap of every trial it ran (a second or more, in the
    parent's wait), and it holds nothing to flush (its records went through `conn`)."""
    try:
        serve_trials(conn, payload, share)
        conn.close()
        os._exit(0)
    except FatalInfrastructureError as exc:
        _send_quietly(conn, ("fatal", str(exc), exc.stopped))
    except BaseException as exc:  # noqa: BLE001 - told to the parent, which ends the run
        line = (str(exc).splitlines() or [type(exc).__name__])[0]
        _send_quietly(conn, ("error", f"{type(exc).__name__}: {line}", traceback.format_exc()))
    finally:
        conn.close()


def _send_quietly(conn: Connection, message: object) -> None:
    with contextlib.suppress(OSError, ValueError):
        conn.send(message)


# --------------------------------------------------------------------------------------- the parent


@dataclass
class _Child:
    process: Any
    conn: Connection
    share: int
    outstanding: dict[tuple[str, str, int], TrialJob] = field(default_factory=dict)
    told_to_stop: bool = False

    def tell_stop(self) -> None:
        if not self.told_to_stop:
            self.told_to_stop = True
            _send_quietly(self.conn, None)


def _key(record: TrialRecord) -> tuple[str, str, int]:
    return (record.domain, record.task_id, record.trial_index)


def _job_key(job: TrialJob) -> tuple[str, str, int]:
    return (job.domain.name, job.task.id, job.trial_index)


def run_in_processes(
    jobs: Iterable[TrialJob],
    payloads: list[tuple[int, bytes]],
    budget_spent: Callable[[], bool],
    halt: Halt,
) -> Generator[TrialRecord, None, None]:
    """The `Executor.results` of a local run spread over children, one per payload
    (`child_payloads`; see the module)."""
    context = multiprocessing.get_context("spawn")
    children: list[_Child] = []
    queue: Iterator[TrialJob] = iter(jobs)
    exhausted = False

    def refill(child: _Child) -> None:
        nonlocal exhausted
        if child.told_to_stop:
            return
        batch: list[TrialKey] = []
        while not exhausted and len(child.outstanding) < 2 * child.share:
            job = None if budget_spent() else next(queue, None)
            if job is None:
                exhausted = True
                break
            child.outstanding[_job_key(job)] = job
            batch.append(TrialKey.of(job))
        if batch:
            _send_quietly(child.conn, batch)
        if exhausted:
            child.tell_stop()

    try:
        for share, payload in payloads:
            ours, theirs = context.Pipe()
            process = context.Process(target=child_main, args=(theirs, payload, share), name="cb-trials")
            process.daemon = True
            process.start()
            theirs.close()
            children.append(_Child(process, ours, share))
        for child in children:
            refill(child)
        while any(child.outstanding for child in children):
            waiting = {child.conn: child for child in children if child.outstanding}
            for conn in wait(list(waiting)):
                child = waiting[conn]  # type: ignore[index]
                yield from _receive(child)
                refill(child)
    except BaseException:
        halt.set()
        _stop(children, kill=True)
        raise
    _stop(children, kill=False)


def _receive(child: _Child) -> list[TrialRecord]:
    """What `child` sent: its finished trials; a child gone leaves its trials as `infra_error`."""
    try:
        message = child.conn.recv()
    except (EOFError, OSError):
        child.process.join(STOP_S)
        lost = list(child.outstanding.values())
        child.outstanding.clear()
        child.told_to_stop = True
        why = f"its trial process (pid {child.process.pid}) ended with exit code {child.process.exitcode}"
        return [failed_record(job, f"lost: {why}", "infra_error") for job in lost]
    kind = message[0]
    if kind == "records":
        records: list[TrialRecord] = message[1]
        for record in records:
            child.outstanding.pop(_key(record), None)
        return records
    if kind == "fatal":
        exc = FatalInfrastructureError(message[1])
        exc.stopped = message[2]
        raise exc
    log.debug("a trial process failed:\n%s", message[2])
    raise FatalInfrastructureError(f"a trial process failed: {message[1]}")


def _stop(children: list[_Child], kill: bool) -> None:
    """End every child: told to stop (and given `STOP_S` seconds), or at once (`kill`)."""
    for child in children:
        if kill:
            child.process.terminate()
        else:
            child.tell_stop()
    for child in children:
        child.process.join(STOP_S)
        if child.process.is_alive():
            child.process.kill()
            child.process.join(STOP_S)
        child.conn.close()
