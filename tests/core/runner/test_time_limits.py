"""Time limits: an agent that overruns its step or trial ends that trial as `timeout`, scored 0
and counted apart; the run goes on."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from castbench._base.errors import AgentTimeout
from castbench._base.wakeup import Wakeup
from castbench._records.config import RunConfig
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._results.report.summary import summarize_run
from castbench._run.api import evaluate
from castbench._trial.deadline import AgentThread, Cancelled, Halt, TimeLimits
from castbench.domain import load_domain
from tests.support import sqlite_url


def _record(task: str, index: int, end: str, reward: float) -> TrialRecord:
    return TrialRecord(
        domain="toy",
        domain_version="1-0",
        task_id=task,
        trial_index=index,
        seed=index,
        status="scored",
        reward=reward,
        end_reason=end,  # type: ignore[arg-type]
        opening="hi",
    )


def test_timed_out_trials_score_zero_and_are_counted_apart() -> None:
    config = RunConfig(domains={"toy": "1-0"}, policy="p", trials=2)
    records = [_record("a", 0, "user_stop", 1.0), _record("a", 1, "timeout", 0.0)]
    report = summarize_run("r-x", config, records).domains["toy"]
    assert report.timed_out_trials == 1 and report.end_reasons["timeout"] == 1
    assert report.pass_hat[1] == 0.5 and report.incomplete_tasks == []


HANG = "tests.core.hostile_agents:HostilePolicy?on_trial=0&mode="


def _tasks(count: int = 2) -> list[str]:
    return [task.id for task in load_domain("retail").tasks("test")[:count]]


def _timed(tmp_path: Path, policy: str, limits: TimeLimits) -> tuple[float, list[TrialRecord]]:
    db = sqlite_url(tmp_path / "runs.db")
    started = time.monotonic()
    evaluate(domains="retail", tasks=_tasks(), trials=2, db=db, policy=policy, time_limits=limits)
    elapsed = time.monotonic() - started
    store = ResultsStore(db)
    assert store.run("latest").status == "complete"
    return elapsed, store.trials(store.run("latest").id)


@pytest.mark.parametrize(
    ("mode", "limits", "limit"),
    [
        ("hang", TimeLimits(step_s=0.5, trial_s=None), "step time limit (0.5 s)"),
        ("hang_init", TimeLimits(step_s=0.5, trial_s=60), "step time limit (0.5 s)"),
        ("slow&seconds=0.2", TimeLimits(step_s=5, trial_s=0.7), "trial time limit (0.7 s)"),
    ],
)
def test_an_agent_past_its_time_limit_ends_its_trial_as_timeout(
    tmp_path: Path, mode: str, limits: TimeLimits, limit: str
) -> None:
    elapsed, records = _timed(tmp_path, HANG + mode, limits)
    assert elapsed < 30  # the hung calls (an hour each) were abandoned, not waited for
    for record in records:
        if record.trial_index == 0:
            assert (record.status, record.end_reason, record.reward, record.grade) == (
                "scored",
                "timeout",
                0.0,
                None,
            )
            assert record.error is not None and limit in record.error and "policy overran" in record.error
        else:
            assert record.end_reason == "user_stop"


def _castbench() -> str:
    return str(Path(sys.executable).parent / "castbench")


def _eval_command(db: Path, policy: str, *extra: str) -> list[str]:
    tasks = ",".join(_tasks(6))
    return [
        *[_castbench(), "eval", "--details", "--domain", "retail", "--tasks", tasks],
        *["--trials", "4", "--policy", policy],
        *["--db", sqlite_url(db), *extra],
    ]


def test_the_command_exits_despite_an_abandoned_agent(tmp_path: Path, repo_env: dict[str, str]) -> None:
    command = _eval_command(
        tmp_path / "runs.db", HANG + "hang", "--step-timeout", "0.5", "--concurrency", "2"
    )
    done = subprocess.run(command, cwd=tmp_path, env=repo_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "timed out (scored 0)" in done.stdout


def test_a_halt_wakes_an_agent_call_at_once_and_a_finished_call_keeps_its_value() -> None:
    """Ctrl-C must not wait for a stuck agent (no deadline here) nor for a poll interval; a call
    that finished before the halt is not thrown away."""
    halt = Halt()
    agent = AgentThread("agents-test", halt)
    assert agent.call(lambda: 42, what="quick") == 42
    stuck = threading.Event()
    threading.Timer(0.2, halt.set).start()
    started = time.monotonic()
    with pytest.raises(Cancelled, match="interrupted during stuck step"):
        agent.call(stuck.wait, what="stuck step")
    assert time.monotonic() - started < 5
    with pytest.raises(Cancelled):  # once halted, a new call does not start waiting at all
        agent.call(stuck.wait, what="later step")
    stuck.set()
    agent.close()


def test_a_thread_left_running_an_abandoned_call_never_serves_another_trial() -> None:
    """Agent threads are reused across trials, except one still busy with a call its trial gave
    up on: the next trial's calls must not queue behind it."""
    stuck = threading.Event()
    first = AgentThread("agents-first")
    with pytest.raises(AgentTimeout):
        first.call(stuck.wait, deadline=time.monotonic() + 0.2, what="stuck step")
    first.close()
    for index in range(3):
        later = AgentThread(f"agents-later-{index}")
        assert later.call(lambda: "answer", deadline=time.monotonic() + 5) == "answer"
        assert later.call(threading.current_thread) is not threading.current_thread()
        later.close()
    stuck.set()


def test_a_wakeup_set_twice_around_its_wait_stays_set_and_raises_nothing() -> None:
    """A call that finishes as the run halts is woken twice; the wait must not fail either way."""
    for _ in range(200):
        wakeup = Wakeup()
        setters = [threading.Thread(target=wakeup.set) for _ in range(2)]
        for setter in setters:
            setter.start()
        assert wakeup.wait(5)
        for setter in setters:
            setter.join()
        assert wakeup.wait(0) and wakeup.wait(0)
