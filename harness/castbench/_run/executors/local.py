"""The local executor: trials in this process, where the run's execution plan puts them
(`castbench._trial.execution`): one at a time on this thread, greenlets on the process's model
loop (`castbench._agents.models.loop.LoopCalls`) or a thread per trial (and its agents one more,
`AgentThread`). The plan puts a Ray worker's batch in its pool, however small.
Either way this thread hands out the jobs and yields the records, so the caller commits them here.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from queue import SimpleQueue
from typing import ClassVar

from castbench._agents.models.loop import LoopCalls
from castbench._records.execution import ExecutorName
from castbench._records.trial import TrialRecord
from castbench._run.plan import TrialJob
from castbench._run.work import ExpectedStates, TrialWork
from castbench._trial.deadline import Halt

__all__ = ["LocalExecutor", "second_interrupt_exits"]


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

        if work.plan.trials == "inline":
            for job in jobs:
                if budget_spent():
                    return
                yield run(job)
            return
        concurrency = max(1, concurrency)
        pool = LoopCalls(concurrency) if work.plan.pool == "loop" else _Threads(concurrency)
        finished: SimpleQueue[Future[TrialRecord]] = SimpleQueue()
        in_flight = 0

        def submit(job: TrialJob) -> None:
            nonlocal in_flight
            pool.submit(run, job).add_done_callback(finished.put)
            in_flight += 1

        queue = iter(jobs)
        try:
            for job in islice(queue, concurrency * 2):  # the pool starts the next one as one ends
                submit(job)
            while in_flight:
                # each trial reports itself done: waiting on the whole set of futures instead
                # cost a lock per future in flight at every wake-up
                done = finished.get()
                in_flight -= 1
                # refill first: the caller commits each record before it asks for the next, and
                # a free slot must not wait for that (with hundreds in flight, the commits add up)
                following = None if budget_spent() else next(queue, None)
                if following is not None:
                    submit(following)
                yield done.result()
        except BaseException:
            halt.set()
            with second_interrupt_exits():
                pool.shutdown(cancel=True)
            raise
        pool.shutdown()


class _Threads(ThreadPoolExecutor):
    """A thread per trial in flight, shut down as `LoopCalls` is."""

    def __init__(self, concurrency: int) -> None:
        super().__init__(max_workers=concurrency, thread_name_prefix="trial")

    def shutdown(self, cancel: bool = False) -> None:  # type: ignore[override]
        super().shutdown(wait=True, cancel_futures=cancel)
