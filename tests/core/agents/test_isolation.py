"""Import-path agents run in worker processes of their own: the ground truth is out of their
reach, a worker that overruns the step time limit is stopped (`timeout`), one that dies ends its
trial as `agent_error`, every trial gets a fresh process (forked by its worker) and agent, and
`--in-process` is recorded and refused by leaderboards."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._agents.registry import resolve
from castbench._base.conversation import ReplyAction
from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run
from castbench._results.publish.board import load_board
from castbench._results.report.summary import summarize_run
from castbench._run.api import evaluate
from castbench._trial.rollout import AgentSet, TimeLimits, TrialRuntime, TrialSpec, run_trial
from castbench.domain import load_domain
from castbench_boards.rows import eligibility_problems
from tests.support import process_ended

HOSTILE = "tests.core.agents.hostile_agents"


def _change_tasks(count: int) -> list[str]:
    """Tasks a policy that does nothing fails."""
    return [task.id for task in load_domain("retail").tasks("test") if task.outcome == "change"][:count]


@pytest.mark.parametrize("where", ["stack", "heap", "domain"])
def test_a_peeking_policy_finds_the_ground_truth_only_in_process(where: str, tmp_path: Path) -> None:
    options = {
        "domains": "retail",
        "policy": f"{HOSTILE}:PeekingPolicy?where={where}",
        "trials": 1,
        "tasks": _change_tasks(4),
        "db": f"sqlite:///{tmp_path / 'r.db'}",
    }
    peeked = evaluate(**options, in_process=True).summary  # type: ignore[arg-type]
    isolated = evaluate(**options).summary  # type: ignore[arg-type]
    assert peeked.overall.pass_hat[1] == 1.0  # the attack works where the agent shares our process
    assert isolated.overall.pass_hat[1] == 0.0  # and finds nothing in its worker
    assert isolated.config.in_process == [] and isolated.config.privileged == []
    assert peeked.config.in_process == ["policy"]


def _trial(policy: str, step_timeout: float | None = None, task_index: int = 0):  # type: ignore[no-untyped-def]
    retail = load_domain("retail")
    task = retail.tasks("test")[task_index]
    agents = AgentSet(policy=resolve("policy", policy), user=resolve("user", "scripted"))
    limits = TimeLimits(step_s=step_timeout)
    return run_trial(
        TrialSpec(retail, task, 0, 1, agents, retail.replay(task)), TrialRuntime(time_limits=limits)
    )


def test_a_worker_past_the_step_time_limit_is_stopped_and_the_trial_times_out() -> None:
    started = time.monotonic()
    record = _trial(f"{HOSTILE}:SleepyPolicy?seconds=120&announce=true", step_timeout=1.0)
    assert time.monotonic() - started < 60
    assert record.end_reason == "timeout" and record.status == "scored" and record.reward == 0.0
    assert record.error is not None and "1 s" in record.error and "propos" in record.error
    pid = int(record.agent_output["policy"].split("sleepy worker pid ")[-1].split()[0])  # its stderr, kept
    assert process_ended(pid)  # its trial's process was stopped, not left sleeping
    # the next trial gets a fresh worker
    assert _trial(f"{HOSTILE}:SleepyPolicy?seconds=0", step_timeout=30).end_reason == "user_stop"


def test_a_worker_that_dies_ends_its_trial_as_agent_error_and_the_next_one_runs() -> None:
    record = _trial(f"{HOSTILE}:CrashingPolicy")
    assert record.end_reason == "agent_error" and record.reward == 0.0
    assert record.error is not None and "agent process exited (code 3) during propose" in record.error
    assert _trial(f"{HOSTILE}:PidPolicy").end_reason == "user_stop"


def test_every_trial_gets_a_fresh_process_and_a_fresh_agent(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = evaluate(
        domains="retail", policy=f"{HOSTILE}:PidPolicy", trials=3, tasks=_change_tasks(2), db=db
    )
    replies = [
        step.action.text
        for record in ResultsStore(db).trials(result.outcome.run_id)
        for step in record.steps
        if isinstance(step.action, ReplyAction)
    ]
    assert len(replies) == 6
    assert len({reply.split(" step ")[0] for reply in replies}) == 6  # a fresh process every trial
    assert all(" step 1. " in reply for reply in replies)  # a fresh instance every trial
    both = evaluate(
        domains="retail",
        policy=f"{HOSTILE}:PidPolicy",
        trials=4,
        tasks=_change_tasks(2),
        db=db,
        concurrency=2,
    )
    assert both.outcome.ran == 8 and both.summary.domains["retail"].end_reasons == {"user_stop": 8}


def test_the_eval_command_records_in_process(tmp_path: Path) -> None:
    output = tmp_path / "s.json"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--domain",
            "retail",
            "--tasks",
            "retail-test-0001",
            "--trials",
            "1",
            "--in-process",
            "--policy",
            "tests.core.fixtures_agents:TeamPolicy",
            "--db",
            f"sqlite:///{tmp_path / 'r.db'}",
            "--output",
            str(output),
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(output.read_text())["config"]["in_process"] == ["policy"]


def test_a_user_in_a_worker_performs_device_steps_on_the_trial_state(tmp_path: Path) -> None:
    telecom = load_domain("telecom")
    tasks = [task.id for task in telecom.tasks("test") if task.scenario.device_steps][:3]
    options = {"domains": "telecom", "policy": "oracle", "trials": 1, "tasks": tasks}
    builtin = evaluate(**options, db=f"sqlite:///{tmp_path / 'a.db'}").summary  # type: ignore[arg-type]
    worker = evaluate(  # type: ignore[arg-type]
        **options, user=f"{HOSTILE}:WorkerScriptedUser", db=f"sqlite:///{tmp_path / 'b.db'}"
    ).summary
    assert worker.overall.pass_hat[1] == builtin.overall.pass_hat[1] == 1.0


def test_the_same_agent_gives_the_same_trials_in_a_worker_and_in_process(tmp_path: Path) -> None:
    options = {
        "domains": "retail",
        "policy": "tests.core.fixtures_agents:RecordingPolicy",
        "critic": "tests.critic.recording:ApproveAllCritic",
        "trials": 2,
        "tasks": _change_tasks(3),
    }
    runs = []
    for in_process in (False, True):
        db = f"sqlite:///{tmp_path / f'{in_process}.db'}"
        result = evaluate(**options, db=db, in_process=in_process)  # type: ignore[arg-type]
        runs.append(
            [
                r.model_dump(include={"steps", "end_reason", "reward"})
                for r in ResultsStore(db).trials(result.outcome.run_id)
            ]
        )
    for trials in runs:
        for trial in trials:
            for step in trial["steps"]:
                step.pop("timing")
                for proposal in step["proposals"]:
                    proposal.pop("policy_s"), proposal.pop("critic_s")
    assert runs[0] == runs[1] and any(len(t["steps"]) > 5 for t in runs[0])


def test_in_process_runs_are_recorded_and_refused_by_leaderboards(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = evaluate(
        domains="retail", policy="tests.core.fixtures_agents:TeamPolicy", trials=2, db=db, in_process=True
    )
    assert result.summary.config.in_process == ["policy"]
    exported = export_run(ResultsStore(db), result.outcome.run_id)
    board = tmp_path / "leaderboards" / "b.toml"
    board.parent.mkdir()
    board.write_text('title = "B"\ndomains = { retail = 3 }\ntrials = 2\nmetrics = ["pass^1"]\n')
    summary = summarize_run(exported.run_id, exported.config, exported.trials)
    problems = eligibility_problems(load_board(board), exported, summary)
    assert problems == [
        "ran the policy inside castbench's process (--in-process), where it could read the ground truth"
    ]


_ORPHANING_PARENT = """
import os, socket, subprocess, sys, time
from castbench._agents.transports.worker import SERVE
ours, theirs = socket.socketpair()
worker = subprocess.Popen([sys.executable, "-m", SERVE, str(theirs.fileno()), str(os.getpid())],
                          pass_fds=[theirs.fileno()], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:  # a forked child keeps castbench's end of the pipe open after castbench is gone
    os.close(1), os.close(2)
    time.sleep(60)
    os._exit(0)
print(worker.pid, flush=True)
os._exit(0)
"""


def test_a_worker_exits_when_castbench_dies_even_if_its_pipe_stays_open() -> None:
    parent = subprocess.run(
        [sys.executable, "-c", _ORPHANING_PARENT], capture_output=True, text=True, check=True
    )
    assert process_ended(int(parent.stdout.split()[0]), within=30)
