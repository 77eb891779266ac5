"""A model server too slow for the time limits is castbench's infrastructure problem, never the
agent's 0: its trials are infrastructure errors, restarted from their seed as such, and a run
whose trials stay unscored exits non-zero with one `error:` line naming the server.

The server is the fault server on 127.0.0.1 answering every request after `SLOW_S` seconds,
longer than the model's per-attempt `timeout` or the step time limit each test sets.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench.domain import Domain
from tests.models.fault_server import FaultServer
from tests.support import sqlite_url

SLOW_S = 4.0
FAST = "backoff_s=0.01&backoff_max_s=0.05&max_attempts=2"
TASKS = "retail-test-0001,retail-test-0002"


def _eval(server: FaultServer, db: str, settings: str, *args: str) -> Any:
    policy = f"openai/policy?api_base={server.base_url}&{FAST}&{settings}"
    argv = ["eval", "--domain", "retail", "--tasks", TASKS, "--trials", "1", "--policy", policy]
    return CliRunner().invoke(app, [*argv, "--db", db, *args])


def _one_error_line(output: str) -> str:
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    return " ".join(output[output.index("error:") :].split())


def _records(db: str) -> tuple[str, list[TrialRecord]]:
    store = ResultsStore(db)
    run = store.run("latest")
    return run.status, store.trials(run.id)


@pytest.fixture
def slow(fault_server: Callable[..., FaultServer]) -> FaultServer:
    return fault_server(rates={"slow": 1.0}, slow_s=SLOW_S)


def test_attempt_timeouts_are_retried_infrastructure_errors(slow: FaultServer, tmp_path: Path) -> None:
    """A server that may be re-sent to (`resend_timeouts=true`): each call is tried twice, each
    trial restarted from its seed, and none of it is scored."""
    db = sqlite_url(tmp_path / "runs.db")
    result = _eval(slow, db, "timeout=0.5&resend_timeouts=true")
    assert result.exit_code == 1, result.output
    said = _one_error_line(result.output)
    assert "incomplete: 2 planned trial(s) unscored, 2 for: policy model openai/policy" in said
    assert "no answer within the attempt's timeout" in said and "re-run the same command" in said
    status, records = _records(db)
    assert status == "incomplete" and len(records) == 2
    for record in records:
        assert record.status == "error" and record.end_reason == "infra_error" and record.reward is None
        assert record.attempts == 3 and len(record.retried_for) == 2  # restarted as infrastructure
    assert slow.requests >= 2 * 3 * 2  # 2 tasks x 3 tries x 2 attempts


@pytest.mark.parametrize("concurrency", ["1", "2"])  # the agent thread; trials on the model loop
def test_a_step_limit_cut_short_by_the_server_is_not_the_agents_timeout(
    slow: FaultServer, tmp_path: Path, concurrency: str
) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    args = ("--step-timeout", "1", "--concurrency", concurrency)
    result = _eval(slow, db, "resend_timeouts=true", *args)
    assert result.exit_code == 1, result.output
    said = _one_error_line(result.output)
    assert f"at {slow.base_url}: no answer within the step time limit (1 s)" in said
    assert "not the agent's failure" in said and "--step-timeout" in said
    status, records = _records(db)
    assert status == "incomplete"
    assert [(r.status, r.end_reason, r.attempts) for r in records] == [("error", "infra_error", 3)] * 2
    assert not any(r.status == "scored" for r in records)  # was: scored 0, ended `timeout`


def test_a_local_server_that_keeps_computing_stops_the_run(slow: FaultServer, tmp_path: Path) -> None:
    """A loopback server by default is not re-sent to (it keeps computing what was abandoned):
    the first overrun stops the run, as a timed-out attempt does, with the trial it stopped on
    the record, unscored."""
    db = sqlite_url(tmp_path / "runs.db")
    result = _eval(slow, db, "seed=1", "--step-timeout", "1")
    assert result.exit_code == 2, result.output
    said = _one_error_line(result.output)
    assert "no answer within the step time limit (1 s)" in said and "not re-tried" in said
    status, records = _records(db)
    assert status == "failed"
    assert [(r.status, r.end_reason) for r in records] == [("error", "infra_error")]


def test_an_agents_own_slowness_is_still_its_timeout(retail: Domain, tmp_path: Path) -> None:
    """Code of one's own that overruns the step limit is the agent's timeout, scored 0, as before:
    only castbench's model agents waiting on their server are excused."""
    db = sqlite_url(tmp_path / "runs.db")
    argv = ["eval", "--domain", "retail", "--tasks", TASKS, "--trials", "1", "--step-timeout", "0.5"]
    policy = "tests.models.test_slow_model_server:SleepyPolicy"
    result = CliRunner().invoke(app, [*argv, "--policy", policy, "--in-process", "--db", db])
    assert result.exit_code == 0, result.output
    status, records = _records(db)
    assert status == "complete"
    assert [(r.status, r.end_reason, r.reward) for r in records] == [("scored", "timeout", 0.0)] * 2


class SleepyPolicy:
    def __init__(self, briefing: Any) -> None:
        self.briefing = briefing

    def propose(self, view: Any) -> Any:
        import time

        time.sleep(1.5)
        raise AssertionError("the step limit ends the trial first")
