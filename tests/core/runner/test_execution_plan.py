"""One execution plan per run (`castbench._trial.execution`): worked out from the run's agents and
options, obeyed by the executor, the episode and the transports, and recorded with the run
(its meta, not its identity) for `castbench runs show`."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from castbench._agents.registry import AgentSpec, resolve
from castbench._agents.transports import AgentCall, InProcessTransport, connect
from castbench._agents.transports.service import ServiceTransport
from castbench._agents.transports.worker import WorkerTransport
from castbench._records.execution import ExecutionPlan
from castbench._records.provenance import provenance
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._run.api import build_config
from castbench._run.engine import run_eval
from castbench._run.executors.local import LocalExecutor
from castbench._trial.deadline import Halt
from castbench._trial.episode import Episode
from castbench._trial.execution import AgentSet, plan_execution
from castbench._trial.rollout import run_trial
from castbench._trial.spec import TrialRuntime, TrialSpec
from castbench.domain import Domain
from tests.support import invoke, sqlite_url

_LEAN = {"model": "openai/p", "api_base": "http://127.0.0.1:9/v1"}


def _model(role: str, params: dict[str, Any]) -> AgentSpec:
    return AgentSpec(role, params["model"], params["model"], lambda *a, **k: None, params, kind="model")  # type: ignore[arg-type]


def _scripted() -> AgentSet:
    return AgentSet(resolve("policy", "oracle"), resolve("user", "scripted"), resolve("critic", "none"))


def _modes(plan: ExecutionPlan) -> dict[str, str]:
    return {role: call.mode for role, call in plan.calls.items()}


def test_scripted_agents_run_on_the_loop_and_one_at_a_time_on_one_thread() -> None:
    """Many trials of agents that never block share the model loop; one at a time with no model to
    await is a pool of one thread: no loop is started (a thread pool of one costs a third of a
    loop's per trial, and `eval` on the offline defaults loads no event loop)."""
    one = plan_execution(_scripted())  # --concurrency 1: a pool of one
    assert (one.trials, one.pool, one.executor, one.shared) == ("threads", "threads", "local", False)
    assert one.why == "no model to await"
    assert _modes(one) == {"policy": "inline", "user": "inline"}  # `--critic none`: no critic
    many = plan_execution(_scripted(), concurrency=16)
    assert (many.trials, many.pool, many.concurrency) == ("loop", "loop", 16)
    assert _modes(many) == _modes(one)
    assert "no agent blocks a thread" in many.why


def test_an_import_path_agent_is_a_worker_and_puts_trials_on_threads() -> None:
    worker = AgentSpec("policy", "m:P", "m:P", None, kind="import", transport="worker")
    plan = plan_execution(replace(_scripted(), policy=worker), concurrency=4)
    assert (plan.trials, plan.pool) == ("threads", "threads")
    assert plan.call("policy").mode == "worker" and plan.call("user").mode == "inline"
    assert plan.why == "the policy may block a thread: an import-path agent, waited for in a worker process"
    in_process = replace(worker, transport="in-process")
    assert plan_execution(replace(_scripted(), policy=in_process), concurrency=4).call("policy").mode == (
        "agent-thread"
    )


def test_a_model_on_the_lean_client_is_awaited_on_the_loop_only_when_its_trial_is_there() -> None:
    agents = AgentSet(_model("policy", _LEAN), resolve("user", "scripted"), _model("critic", _LEAN))
    on_loop = plan_execution(agents, concurrency=8)
    assert on_loop.trials == "loop"
    assert _modes(on_loop) == {"policy": "loop", "user": "inline", "critic": "loop"}
    one = plan_execution(agents)  # --concurrency 1: a pool of one, on the loop too
    assert one.trials == "loop" and one.call("policy").mode == "loop"
    synchronous = replace(agents, critic=_model("critic", {**_LEAN, "model": "custom_openai/p"}))
    threads = plan_execution(synchronous, concurrency=8)
    assert threads.trials == "threads" and _modes(threads)["critic"] == "agent-thread"
    assert "litellm's synchronous client" in threads.why


@pytest.mark.extra("service")  # an agent service is resolved only with its extra
def test_an_agent_service_is_a_transport_that_drives_the_episode() -> None:
    service = resolve("policy", "http://127.0.0.1:9/agent")
    plan = plan_execution(replace(_scripted(), policy=service), concurrency=4)
    assert plan.call("policy").mode == "service" and plan.trials == "threads"
    transport = connect(service, plan.call("policy"))
    assert isinstance(transport, ServiceTransport) and transport.drives
    oracle = resolve("policy", "oracle")
    assert isinstance(connect(oracle, AgentCall(mode="inline", why="")), InProcessTransport)
    assert isinstance(connect(oracle, AgentCall(mode="worker", why="")), WorkerTransport)


def test_ray_and_a_shared_store_are_in_the_plan() -> None:
    plan = plan_execution(_scripted(), "ray", concurrency=4, shared=True)
    assert (plan.executor, plan.trials, plan.pool, plan.shared) == ("ray", "ray", "loop", True)
    assert _modes(plan) == {"policy": "inline", "user": "inline"}
    line = plan.line()
    assert "trial batches on a Ray cluster, 4 at once" in line
    assert "leases on the shared store" in line


class _Work:
    """What `LocalExecutor` reads of a `TrialWork`: the plan, and a trial that notes its thread."""

    def __init__(self, plan: ExecutionPlan) -> None:
        self.plan = plan
        self.threads: set[str] = set()

    def run(self, job: Any, expected: Any, stop: Halt) -> TrialRecord:
        self.threads.add(threading.current_thread().name)
        return TrialRecord(
            domain="d", domain_version="1", task_id=str(job), trial_index=0, seed=0,
            status="scored", reward=1.0, end_reason="user_stop", opening="",
        )  # fmt: skip


@pytest.mark.parametrize(("trials", "thread", "concurrency"), [("loop", "castbench-models", 1),
                         ("loop", "castbench-models", 4), ("threads", "trial", 4)])  # fmt: skip
def test_the_local_executor_runs_trials_in_its_pool(trials: str, thread: str, concurrency: int) -> None:
    plan = plan_execution(_scripted(), concurrency=concurrency)
    plan = plan.model_copy(update={"trials": trials, "pool": trials})
    work = _Work(plan)
    jobs: list[Any] = list(range(6))
    records = list(LocalExecutor().results(jobs, work, concurrency, lambda: False, Halt()))  # type: ignore[arg-type]
    assert sorted(record.task_id for record in records) == [str(job) for job in jobs]
    assert {name.split("_")[0] for name in work.threads} == {thread}


class _Noting:
    """A built-in policy that notes the thread each proposal is made on."""

    def __init__(self, inner: Any, threads: list[str]) -> None:
        self.inner, self.threads = inner, threads

    def propose(self, view: Any) -> Any:
        self.threads.append(threading.current_thread().name)
        return self.inner.propose(view)


def test_the_episode_calls_each_agent_as_the_plan_says(retail: Domain) -> None:
    oracle = resolve("policy", "oracle")
    threads: list[str] = []
    noting = replace(oracle, factory=lambda briefing, **params: _Noting(oracle.create(briefing), threads))
    agents = AgentSet(noting, resolve("user", "scripted"))
    task = retail.task("retail-test-0001")
    inline = run_trial(TrialSpec(retail, task, 0, 1, agents, retail.replay(task)))
    assert inline.reward == 1.0 and set(threads) == {threading.current_thread().name}
    plan = plan_execution(agents)
    forced = plan.model_copy(
        update={"calls": {**plan.calls, "policy": AgentCall(mode="agent-thread", why="test")}}
    )
    threads.clear()
    on_thread = run_trial(
        TrialSpec(retail, task, 0, 1, agents, retail.replay(task)), TrialRuntime(plan=forced)
    )
    assert on_thread.reward == 1.0 and {name.split("-")[0] for name in threads} == {"agents"}
    episode = Episode(TrialSpec(retail, task, 0, 1, agents, retail.replay(task)), TrialRuntime(plan=forced))
    assert episode.never_blocks("user") and not episode.never_blocks("policy")


def test_the_plan_is_recorded_with_the_run_not_in_its_identity(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "r.db")
    config, agents = build_config(domains="retail", policy="oracle", trials=1, tasks=["retail-test-0001"])
    store = ResultsStore(db)
    first = run_eval(config, agents, store, concurrency=3)
    again = run_eval(config, agents, store, concurrency=1)  # another plan: the same run, resumed
    assert again.run_id == first.run_id and again.resumed
    recorded = provenance(config, json.loads(store.run(first.run_id).meta_json))
    assert recorded.execution == plan_execution(agents, "local", 3, False)
    assert recorded.execution_line().startswith("execution: trials as greenlets on the model loop, 3 at once")
    shown = invoke("runs", "show", first.run_id, "--db", db)
    assert shown.exit_code == 0, shown.output
    assert "execution: trials as greenlets on the model loop, 3 at once" in shown.output
    assert "agent calls: policy inline; user inline" in shown.output


def test_a_run_stored_before_plans_were_recorded_says_so(tmp_path: Path) -> None:
    config, _ = build_config(domains="retail", policy="oracle", trials=1, tasks=["retail-test-0001"])
    old = provenance(config, {"origin": {"kind": "run"}})
    assert old.execution is None
    assert old.execution_line().startswith("execution: not recorded")
    assert provenance(config, {"execution": {"trials": "nonsense"}}).execution is None


def test_a_run_stored_with_the_inline_trial_mode_still_reads_and_shows_it() -> None:
    stored = plan_execution(_scripted()).model_dump(mode="json") | {
        "trials": "inline",
        "why": "--concurrency 1",
    }
    old = ExecutionPlan.model_validate(stored)
    assert old.line().startswith("execution: one trial at a time on this thread (--concurrency 1)")
    assert (
        plan_execution(_scripted())
        .line()
        .startswith("execution: a thread per trial, one at a time (no model to await)")
    )
