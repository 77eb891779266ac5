"""The local executor: trials in this process, in the pool the run's execution plan names
(`castbench._trial.execution`): greenlets on the process's model loop
(`castbench._agents.models.loop.LoopCalls`) or a thread per trial (and its agents one more,
`AgentThread`); `--concurrency 1` is a pool of one, and so is a Ray worker's batch of one.
Either way this thread hands out the jobs and yields the records, so the caller commits them here.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from queue import SimpleQueue
from typing import ClassVar

from castbench._records.execution import ExecutorName
from castbench._records.trial import TrialRecord
from castbench._run.executors.pools import trial_pool
from castbench._run.executors.processes import child_payloads, run_in_processes
from castbench._run.plan import TrialJob
from castbench._run.work import ExpectedStates, TrialWork
from castbench._trial.deadline import Halt

__all__ = ["LocalExecutor", "second_interrupt_exits"]

log = logging.getLogger(__name__)


@contextmanager
def second_interrupt_exits() -> Iterator[None]:
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


@dataclass
class LocalExecutor:
    expected: ExpectedStates = field(default_factory=ExpectedStates)
    """Replayed once per task and shared by every trial of the run."""
    name: ClassVar[ExecutorName] = "local"

    def results(
        self,
        jobs: Iterable[TrialJob],
        work: TrialWork,
        concurrency: int,
        budget_spent: Callable[[], bool],
        halt: Halt,
    ) -> Generator[TrialRecord, None, None]:
        def run(job: TrialJob) -> TrialRecord:
            return work.run(job, self.expected, halt)

        if work.plan.processes > 1:
            payloads = child_payloads(work, concurrency, work.plan.processes)
            if not isinstance(payloads, str):
                yield from run_in_processes(jobs, payloads, budget_spent, halt)
                return
            log.warning("warning: the trials run in this process only: %s", payloads)
        concurrency = max(1, concurrency)
        pool = trial_pool(work.plan.pool, concurrency)
        finished: SimpleQueue[Future[TrialRecord]] = SimpleQueue()
        in_flight = 0

        def submit(job: TrialJob) -> None:
            nonlocal in_flight
            pool.submit(run, job).add_done_callback(finished.put)
            in_flight += 1

        # with several in flight, a free slot is refilled before the caller commits the record
        # that freed it (with hundreds in flight, the commits add up); one at a time, the caller
        # keeps each record (charged, watched for a broken agent) before the next trial starts
        early = concurrency > 1
        queue = iter(jobs)

        def refill() -> None:
            following = None if budget_spent() else next(queue, None)
            if following is not None:
                submit(following)

        try:
            for _ in range(2 * concurrency if early else 1):  # the pool starts the next one as one ends
                refill()
            while in_flight:
                # each trial reports itself done: waiting on the whole set of futures instead
                # cost a lock per future in flight at every wake-up
                done = finished.get()
                in_flight -= 1
                if early:
                    refill()
                yield done.result()
                if not early:
                    refill()
        except BaseException:
            halt.set()
            with second_interrupt_exits():
                pool.shutdown(cancel=True)
            raise
        pool.shutdown()
