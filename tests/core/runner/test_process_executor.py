"""A run's trials over several processes (`castbench._run.executors.processes`): chosen by the
execution plan, the same run as in one process (ids, records, tables), this process the only store
writer, a child that dies leaving recorded failures, Ctrl-C as with one process."""

from __future__ import annotations

import os
import pickle
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import castbench._trial.execution as execution
from castbench._agents.models.resolve import ModelOptions, resolve_agent
from castbench._agents.registry import AgentSpec, resolve
from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._run.api import build_config
from castbench._run.executors.processes import child_payloads, run_in_processes, shares
from castbench._run.options import EvalOptions
from castbench._run.plan import plan_trials
from castbench._run.work import TrialWork
from castbench._trial.deadline import Halt, TimeLimits
from castbench._trial.execution import PER_PROCESS, AgentSet, plan_execution
from castbench.domain import load_domain
from tests.support import ctrl_c_delivered, invoke, sqlite_url, without_durations

_LEAN = {"model": "openai/p", "api_base": "http://127.0.0.1:9/v1"}


def _scripted() -> AgentSet:
    return AgentSet(
        resolve("policy", "scripted:noisy"), resolve("user", "scripted"), resolve("critic", "none")
    )


def _lean_model() -> AgentSet:
    spec = AgentSpec("policy", "openai/p", "openai/p", lambda *a, **k: None, _LEAN, kind="model")  # type: ignore[arg-type]
    return AgentSet(spec, resolve("user", "scripted"))


def test_the_plan_spreads_many_trials_on_the_loop_over_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execution, "default_processes", lambda: 16)
    assert plan_execution(_lean_model(), concurrency=PER_PROCESS).processes == 1
    assert plan_execution(_lean_model(), concurrency=PER_PROCESS + 1).processes == 2
    many = plan_execution(_lean_model(), concurrency=512)
    assert (many.processes, many.trials, many.concurrency) == (8, "loop", 512)
    assert "8 processes" in many.why and "over 8 processes" in many.line()
    assert plan_execution(_lean_model(), concurrency=4096).processes == 16  # one per core at most
    monkeypatch.setattr(execution, "default_processes", lambda: 1)
    assert plan_execution(_lean_model(), concurrency=512).processes == 1  # one core: this process


def test_workers_asks_for_processes_and_some_agents_keep_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execution, "default_processes", lambda: 16)
    assert plan_execution(_lean_model(), concurrency=512, workers=1).processes == 1
    assert plan_execution(_scripted(), concurrency=8, workers=3).processes == 3
    assert plan_execution(_scripted(), concurrency=2, workers=3).processes == 2  # no more than C
    assert plan_execution(_scripted(), concurrency=1, workers=3).processes == 1  # no more than C
    own = AgentSpec("policy", "m:P", "m:P", None, kind="import", transport="in-process")  # type: ignore[arg-type]
    threads = plan_execution(AgentSet(own, resolve("user", "scripted")), concurrency=512)
    assert (threads.trials, threads.processes) == ("threads", 1)  # chosen for the loop only
    asked = plan_execution(AgentSet(own, resolve("user", "scripted")), concurrency=8, workers=2)
    assert asked.processes == 2
    worker = AgentSpec("policy", "m:P", "m:P", None, kind="import", transport="worker")  # type: ignore[arg-type]
    kept = plan_execution(AgentSet(worker, resolve("user", "scripted")), concurrency=8, workers=4)
    assert kept.processes == 1 and "--workers 4 not used: worker agents keep one process" in kept.why
    assert plan_execution(_lean_model(), executor="ray", concurrency=512, workers=4).processes == 1


def test_concurrency_is_split_over_the_processes() -> None:
    assert shares(512, 8) == [64] * 8
    assert shares(10, 4) == [3, 3, 2, 2]
    assert shares(3, 8) == [1, 1, 1]


def _table(output: str) -> str:
    """What `eval` printed, less what measures time or names a path."""
    kept = [line for line in output.splitlines() if not re.search(r"\d+:\d\d:\d\d|\bs\b|stored in", line)]
    return "\n".join(line.rstrip() for line in kept if not line.startswith("execution:"))


def test_one_run_in_one_and_in_two_processes_is_the_same_run(tmp_path: Path) -> None:
    tasks = ",".join(task.id for task in load_domain("retail").tasks("test")[:6])
    common = ["eval", "--domain", "retail", "--tasks", tasks, "--trials", "3", "--policy", "scripted:noisy"]
    ran: dict[str, dict[str, Any]] = {}
    for workers in ("1", "2"):
        db = sqlite_url(tmp_path / f"w{workers}.db")
        result = invoke(*common, "--concurrency", "4", "--workers", workers, "--db", db)
        assert result.exit_code == 0, result.output
        store = ResultsStore(db)
        (row,) = store.runs()
        records = sorted(store.trials(row.id), key=lambda r: (r.domain, r.task_id, r.trial_index))
        shown = invoke("runs", "show", row.id, "--details", "--db", db)
        assert shown.exit_code == 0, shown.output
        ran[workers] = {
            "run id": row.id,
            "config": row.config_json,
            "records": [without_durations(r.model_dump(mode="json")) for r in records],
            "eval": _table(result.output),
            "runs show": _table(shown.output),
        }
        meta = store.run(row.id).meta_json.replace(" ", "")
        assert f'"processes":{workers}' in meta  # the plan is on the record, and only it differs
    assert ran["1"] == ran["2"]
    assert "pass^1" in ran["1"]["eval"] and "pass^1" in ran["1"]["runs show"]
    assert len(ran["1"]["records"]) == 18 and len({r["reward"] for r in ran["1"]["records"]}) == 2


def _work(config: RunConfig, agents: AgentSet, concurrency: int, workers: int) -> TrialWork:
    plan = plan_execution(agents, concurrency=concurrency, workers=workers)
    return TrialWork(config, agents, plan, TimeLimits())


def test_a_child_that_dies_leaves_its_trials_as_recorded_failures(tmp_path: Path) -> None:
    """Killed outright, a child's outstanding trials come back as `infra_error` records (a re-run
    plays them again); the other child's trials are its own; no trial is lost or doubled."""
    options = EvalOptions.of(domains="retail", split="test", trials=4, policy="scripted:noisy")
    config, agents = build_config(options)
    config = config.model_copy(update={"planned_tasks": {"retail": config.planned_tasks["retail"][:12]}})
    jobs = list(plan_trials(config))
    import multiprocessing

    payloads = child_payloads(_work(config, agents, 4, 2), 4, 2)
    assert not isinstance(payloads, str)
    results = run_in_processes(iter(jobs), payloads, lambda: False, Halt())
    got = [next(results)]
    (victim, *_) = multiprocessing.active_children()
    os.kill(victim.pid, signal.SIGKILL)  # type: ignore[arg-type]
    got += list(results)
    keys = [(r.domain, r.task_id, r.trial_index) for r in got]
    assert sorted(keys) == sorted((j.domain.name, j.task.id, j.trial_index) for j in jobs)
    lost = [r for r in got if r.end_reason == "infra_error"]
    assert lost and all(r.status == "error" and "ended with exit code -9" in (r.error or "") for r in lost)
    assert any(r.status == "scored" for r in got)
    assert not multiprocessing.active_children()


def test_ctrl_c_stops_every_process_and_the_run_resumes(tmp_path: Path, repo_env: dict[str, str]) -> None:
    db = tmp_path / "runs.db"
    tasks = ",".join(task.id for task in load_domain("retail").tasks("test")[:4])
    hangs = "tests.core.hostile_agents:HostilePolicy?mode=hang&on_trial=3"
    castbench = str(Path(sys.executable).parent / "castbench")
    command = [castbench, "eval", "--domain", "retail", "--tasks", tasks, "--trials", "4", "--policy", hangs]
    command += ["--in-process", "--concurrency", "4", "--workers", "2", "--db", sqlite_url(db)]
    process = subprocess.Popen(
        [*command, "--step-timeout", "0", "--trial-timeout", "0"],
        cwd=tmp_path,
        env=repo_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=ctrl_c_delivered,
        start_new_session=True,
    )
    store = ResultsStore(sqlite_url(db))
    deadline, stored, since = time.monotonic() + 90, -1, time.monotonic()
    while time.monotonic() < deadline and process.poll() is None:
        count = sum(store.count_trials(row.id) for row in store.runs()) if db.exists() else 0
        if count != stored:
            stored, since = count, time.monotonic()
        elif count > 0 and time.monotonic() - since > 3:
            break
        time.sleep(0.2)
    assert process.poll() is None, process.communicate()[0]
    os.killpg(process.pid, signal.SIGINT)  # as a terminal sends it: to every process of the group
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 130, output
    assert "over 2 processes" in output and f"{stored} of 16 trials stored" in " ".join(output.split())
    assert output.count("Traceback") == 0
    resumed = subprocess.run(
        [*command, "--step-timeout", "0.5"], cwd=tmp_path, env=repo_env, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    (row,) = store.runs()
    records = store.trials(row.id)
    assert len(records) == 16 and len({(r.task_id, r.trial_index) for r in records}) == 16
    assert sum(r.end_reason == "timeout" for r in records) == 4  # the hung trials, resumed with a limit


def test_model_agents_travel_and_a_closure_keeps_the_run_in_one_process(tmp_path: Path) -> None:
    """A model agent's factory is rebuilt in the child; a factory that cannot be pickled (a
    closure) leaves the run in this process with a warning, never a failed run."""
    policy, _ = resolve_agent(
        "policy", "openai/p?api_base=http://127.0.0.1:9/v1", options=ModelOptions(concurrency=8)
    )
    options = EvalOptions.of(domains="retail", split="test", trials=1, policy="oracle")
    config, agents = build_config(options)
    work = _work(config, AgentSet(policy, agents.user), 8, 2)
    payloads = child_payloads(work, 8, 2)
    assert not isinstance(payloads, str) and [share for share, _ in payloads] == [4, 4]
    shipped = pickle.loads(payloads[0][1]).agents.policy
    assert shipped.params["max_concurrency"] == 4  # the server's limit, split like --concurrency
    assert callable(shipped.factory) and shipped.factory is not policy.factory  # a closure does not pickle

    def closure(*args: object, **kwargs: object) -> object:
        raise AssertionError("never built")

    odd = AgentSpec("policy", "odd", "odd", closure, {}, kind="import", transport="in-process")
    why = child_payloads(_work(config, AgentSet(odd, agents.user), 8, 2), 8, 2)
    assert isinstance(why, str) and "local object" in why
