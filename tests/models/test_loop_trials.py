"""Model-bound trials on the model loop: a run whose agents are scripted or models on the lean
client runs its trials as greenlets on one loop thread (no thread per trial), and there its step
deadline, the per-server limit and Ctrl-C hold as they do on threads."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from castbench._agents.models.loop import shared_loop
from castbench._base.errors import RunInterrupted
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._run.api import build_config, evaluate
from castbench._run.collector import YOUNG_THRESHOLD
from castbench._trial.deadline import TimeLimits
from castbench._trial.execution import plan_execution
from castbench._trial.rollout import Limits
from castbench.domain import Domain
from tests.models.fault_server import FaultServer
from tests.models.responder import InFlight, unique_openings
from tests.support import sqlite_url


def _threads() -> set[tuple[int | None, str]]:
    return {(thread.ident, thread.name) for thread in threading.enumerate()}


class _Watching(InFlight):
    """Also notes the process's threads (id and name) while each request is held."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(delay_s)
        self.threads: set[tuple[int | None, str]] = set()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.threads |= _threads()
        return super().__call__(body)


def _tasks(retail: Domain, count: int) -> list[str]:
    return [task.id for task in unique_openings(retail.tasks("test"))[:count]]


def _run(db: str, retail: Domain, server: FaultServer, tasks: int, **options: Any) -> Any:
    """A retail run of a model policy at `server` (2-step trials unless `limits` says otherwise)."""
    options.setdefault("limits", Limits(max_steps=2))
    policy = f"openai/p?api_base={server.base_url}" + options.pop("query", "")
    return evaluate(db=db, domains="retail", tasks=_tasks(retail, tasks), policy=policy, **options)


def test_which_runs_go_on_the_loop() -> None:
    base = "?api_base=http://127.0.0.1:9/v1"
    on_loop = [("openai/p" + base, "scripted", "none"), ("oracle", "scripted", "hosted_vllm/c" + base)]
    on_threads = [
        ("custom_openai/p" + base, "scripted", "none"),  # litellm's synchronous client
        ("tests.core.hostile_agents:HostilePolicy", "scripted", "none"),  # code of one's own
        ("openai/p" + base, "tests.core.hostile_agents:HostileUser", "none"),
    ]
    for policy, user, critic in on_loop + on_threads:
        _, agents = build_config(domains="retail", policy=policy, user=user, critic=critic)
        expected = (policy, user, critic) in on_loop
        assert (plan_execution(agents, concurrency=8).trials == "loop") is expected, (policy, user, critic)


def test_model_trials_run_on_the_loop_not_on_a_thread_each(
    fault_server: Callable[..., FaultServer], retail: Domain, tmp_path: Path
) -> None:
    responder = _Watching(delay_s=0.5)
    server = fault_server(responder)
    before = _threads()  # idle pooled agent threads of earlier runs keep their last trial's name
    result = _run(sqlite_url(tmp_path / "r.db"), retail, server, 4, trials=6, concurrency=24)
    assert result.outcome.ran == 24 and result.outcome.unscored == 0
    assert responder.peak == 24  # all trials in flight at once
    working = {name for _, name in responder.threads - before}
    assert not [name for name in working if name.startswith(("trial", "agents-"))]
    assert "castbench-models" in {name for _, name in responder.threads}


def test_a_step_deadline_ends_a_trial_waiting_on_the_loop(
    fault_server: Callable[..., FaultServer], retail: Domain, tmp_path: Path
) -> None:
    """The deadline cuts the wait short; the server's slowness is an infrastructure error (the
    trial restarted from its seed, then unscored), not the policy's timeout scored 0."""
    server = fault_server(InFlight(delay_s=20.0))
    db = sqlite_url(tmp_path / "r.db")
    limits = TimeLimits(step_s=0.5, trial_s=None)
    query = "&resend_timeouts=true"  # a server that cancels what it was abandoned (else: the run stops)
    result = _run(db, retail, server, 2, trials=2, concurrency=4, time_limits=limits, query=query)
    records = ResultsStore(db).trials(result.outcome.run_id)
    assert len(records) == 4 and result.outcome.unscored == 4
    for record in records:
        assert (record.status, record.end_reason, record.reward) == ("error", "infra_error", None)
        assert "no answer within the step time limit (0.5 s)" in (record.error or "")
        assert max(record.duration_s, 0) < 10  # the 20 s answers were not waited for


def test_a_limit_below_concurrency_holds_on_the_loop_without_stalling_it(
    fault_server: Callable[..., FaultServer], retail: Domain, tmp_path: Path
) -> None:
    responder = InFlight(delay_s=0.2)
    server = fault_server(responder)
    db = sqlite_url(tmp_path / "r.db")
    result = _run(db, retail, server, 4, trials=3, concurrency=12, query="&max_concurrency=2")
    assert result.outcome.ran == 12 and result.outcome.unscored == 0
    assert responder.peak == 2


def test_ctrl_c_cancels_the_trials_waiting_on_the_loop_and_stores_none_half(
    fault_server: Callable[..., FaultServer], retail: Domain, tmp_path: Path
) -> None:
    responder = InFlight(delay_s=0.3)
    server = fault_server(responder)
    db = sqlite_url(tmp_path / "r.db")
    options: dict[str, Any] = {
        "db": db,
        "domains": "retail",
        "tasks": _tasks(retail, 4),
        "trials": 4,
        "policy": f"openai/p?api_base={server.base_url}",
        "concurrency": 4,
        "limits": Limits(max_steps=3),
    }
    loop = shared_loop()
    before = asyncio.run_coroutine_threadsafe(_task_count(), loop).result(5)

    def interrupt(record: TrialRecord) -> None:
        raise KeyboardInterrupt

    with pytest.raises(RunInterrupted):
        evaluate(**options, on_trial=interrupt)
    assert asyncio.run_coroutine_threadsafe(_task_count(), loop).result(5) == before  # none left waiting
    store = ResultsStore(db)
    run = store.run("latest")
    assert run.status == "interrupted"
    stored = store.trials(run.id)
    assert 1 <= len(stored) < 16 and all(len(record.steps) == 3 for record in stored)
    resumed = evaluate(**options)
    assert resumed.outcome.resumed and resumed.outcome.ran == 16 - len(stored)


async def _task_count() -> int:
    return len(asyncio.all_tasks()) - 1  # not this one


def test_the_collector_is_tuned_during_a_run_and_restored_after(
    fault_server: Callable[..., FaultServer], retail: Domain, tmp_path: Path
) -> None:
    server = fault_server(InFlight(delay_s=0.01))
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    seen: list[tuple[int, int]] = []
    evaluate(
        db=sqlite_url(tmp_path / "r.db"),
        domains="retail",
        tasks=_tasks(retail, 2),
        policy=f"openai/p?api_base={server.base_url}",
        concurrency=2,
        limits=Limits(max_steps=1),
        on_trial=lambda record: seen.append((gc.get_threshold()[0], gc.get_freeze_count())),
    )
    assert seen and all(young >= YOUNG_THRESHOLD and held > frozen for young, held in seen)
    assert (gc.get_threshold(), gc.get_freeze_count()) == (thresholds, frozen)
