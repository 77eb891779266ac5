"""The model loop's bridge between synchronous code and awaits (`castbench._agents.models.loop`): calls run
as greenlets wait together, a deadline or a cancellation reaches the code where it waits, and code
that blocks is moved off the loop."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError

import pytest

from castbench._agents.models import loop


def test_calls_on_the_loop_wait_together_on_one_thread() -> None:
    """20 calls that each wait until all 20 are waiting: they finish only if none waits for
    another to end (one thread, no pool of 20)."""
    arrived: list[int] = []
    everyone = threading.Event()
    threads: set[int] = set()

    async def until_all_arrived() -> None:
        while not everyone.is_set():
            await asyncio.sleep(0.01)

    def call(index: int) -> int:
        threads.add(threading.get_ident())
        arrived.append(index)
        if len(arrived) == 20:
            everyone.set()
        loop.wait_for(until_all_arrived(), 10.0)
        return index * 2

    calls = loop.LoopCalls(20)
    futures = [calls.submit(call, index) for index in range(20)]
    assert sorted(future.result(timeout=10) for future in futures) == [2 * i for i in range(20)]
    calls.shutdown()
    assert len(threads) == 1 and threads != {threading.get_ident()}


def test_loop_calls_hold_to_their_limit() -> None:
    running, peak = [0], [0]

    def call() -> None:
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        loop.wait_for(asyncio.sleep(0.05), None)
        running[0] -= 1

    calls = loop.LoopCalls(3)
    for future in [calls.submit(call) for _ in range(12)]:
        future.result(timeout=10)
    calls.shutdown()
    assert peak[0] == 3


def test_a_deadline_interrupts_the_wait_and_no_except_exception_catches_it() -> None:
    retried: list[str] = []

    def call() -> str:
        with loop.deadline(time.monotonic() + 0.1):
            try:
                loop.wait_for(asyncio.sleep(30), None)
            except Exception as exc:  # a retry loop's catch-all must not see the deadline
                retried.append(repr(exc))
        return "unreachable"

    calls = loop.LoopCalls(1)
    started = time.monotonic()
    with pytest.raises(loop.DeadlinePassed):
        calls.submit(call).result(timeout=10)
    assert time.monotonic() - started < 5
    assert retried == []
    calls.shutdown()


def test_the_calls_own_timeout_is_a_timeout_error() -> None:
    def call() -> None:
        loop.wait_for(asyncio.sleep(30), 0.05)

    calls = loop.LoopCalls(1)
    with pytest.raises(TimeoutError):
        calls.submit(call).result(timeout=10)
    calls.shutdown()


def test_shutdown_with_cancel_unwinds_every_waiting_call() -> None:
    unwound: list[int] = []

    def call(index: int) -> None:
        try:
            loop.wait_for(asyncio.sleep(30), None)
        finally:
            unwound.append(index)

    calls = loop.LoopCalls(5)
    futures = [calls.submit(call, index) for index in range(5)]
    time.sleep(0.2)
    started = time.monotonic()
    calls.shutdown(cancel=True)
    assert time.monotonic() - started < 5
    assert sorted(unwound) == list(range(5))
    for future in futures:
        with pytest.raises(CancelledError):
            future.result(timeout=1)


def test_blocking_code_on_the_loop_runs_on_a_thread_while_the_others_go_on() -> None:
    ticks: list[float] = []

    def blocker() -> str:
        return loop.blocking(lambda: (time.sleep(0.5), threading.current_thread().name)[1])

    def ticker() -> None:
        for _ in range(5):
            loop.wait_for(asyncio.sleep(0.02), None)
            ticks.append(time.monotonic())

    calls = loop.LoopCalls(2)
    started = time.monotonic()
    blocked, ticked = calls.submit(blocker), calls.submit(ticker)
    ticked.result(timeout=10)
    assert not blocked.done()  # the ticker finished while the blocking call still ran
    assert blocked.result(timeout=10) != "castbench-models"
    assert ticks[-1] - started < 0.45
    calls.shutdown()


def test_from_a_thread_wait_for_and_sleep_work_as_before() -> None:
    assert not loop.on_loop()

    async def answer() -> int:
        await asyncio.sleep(0.01)
        return 42

    assert loop.wait_for(answer(), 5.0) == 42
    with pytest.raises(TimeoutError):
        loop.wait_for(asyncio.sleep(30), 0.05)
    with pytest.raises(RuntimeError, match="deadline"), loop.deadline(time.monotonic() + 1):
        pass
