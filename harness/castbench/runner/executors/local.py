"""The local executor: trials on a thread pool in this process."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field

from castbench.runner.deadline import Halt
from castbench.runner.plan import TrialJob
from castbench.runner.records import TrialRecord
from castbench.runner.work import ExpectedStates, TrialWork

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

        if concurrency <= 1:
            for job in jobs:
                if budget_spent():
                    return
                yield run(job)
            return
        pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="trial")
        pending: set[Future[TrialRecord]] = set()
        queue = iter(jobs)
        try:
            for job in queue:
                pending.add(pool.submit(run, job))
                if len(pending) >= concurrency * 2:
                    break
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                # refill first: the caller commits each record before it asks for the next, and
                # a free slot must not wait for that (with hundreds in flight, the commits add up)
                for _ in done:
                    following = None if budget_spent() else next(queue, None)
                    if following is not None:
                        pending.add(pool.submit(run, following))
                for future in done:
                    yield future.result()
        except BaseException:
            halt.set()
            with second_interrupt_exits():
                pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
