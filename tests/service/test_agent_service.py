"""The agent as a service: castbench drives the conversation over HTTP, the agent's tools run
over MCP, and the results are those of the same logic run in process. A service that fails,
hangs or hangs up ends its trial as the agent's failure, never the run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("mcp", reason="MCP: pip install -e '.[service]'")
pytestmark = pytest.mark.extra("service")

from castbench._agents.registry import AgentSpecError, resolve  # noqa: E402
from castbench._base.errors import ServerDown  # noqa: E402
from castbench._cli.app import app  # noqa: E402
from castbench._records.store import ResultsStore  # noqa: E402
from castbench._run.api import evaluate  # noqa: E402
from castbench._trial.deadline import TimeLimits  # noqa: E402
from castbench._trial.episode import Verification  # noqa: E402
from tests.support import sqlite_url  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TASKS = [f"retail-test-{n:04d}" for n in range(1, 13)] + ["retail-test-0023"]


@pytest.fixture(scope="module")
def reference_agent() -> Iterator[str]:
    """examples/agent_service/agent.py as a subprocess on a free loopback port."""
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "agent_service" / "agent.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("listening on "), line
    yield line.split()[-1]
    process.terminate()
    process.wait(timeout=10)


def test_a_decider_that_ends_the_conversation_ends_it_through_the_reference_service(tmp_path: Path) -> None:
    """The reference service sends a decider's closing reply (`ReplyAction.end`) with the stop
    marker, the protocol's ending: the trials lookup-refuse solves end as `agent_stop`, rewarded 1."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    decider = "tests.bridges.closing_deciders:ClosingLookupRefuse"
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "agent_service" / "agent.py"), "--port", "0"]
        + ["--decider", decider],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert process.stdout is not None
    try:
        line = process.stdout.readline()
        assert line.startswith("listening on "), line
        db = sqlite_url(tmp_path / "results.db")
        tasks = ["retail-test-0008", "retail-test-0023"]  # solved by lookup-refuse, seed 11
        result = evaluate(db=db, domains="retail", policy=line.split()[-1], trials=1, tasks=tasks, seed=11)
    finally:
        process.terminate()
        process.wait(timeout=10)
    records = ResultsStore(db).trials(result.outcome.run_id)
    assert len(records) == 2
    for record in records:
        assert (record.end_reason, record.reward) == ("agent_stop", 1.0), (record.task_id, record.error)
        said = record.steps[-1].action
        assert "Goodbye. ###STOP###" in said.text  # type: ignore[union-attr]


def _trials(db: str, run_id: str) -> dict[tuple[str, int], Any]:
    return {(r.task_id, r.trial_index): r for r in ResultsStore(db).trials(run_id)}


@pytest.mark.slow
def test_retail_through_mcp_and_http_matches_the_in_process_agent(
    reference_agent: str, tmp_path: Path
) -> None:
    """retail x 8 trials: the reference service (lookup-refuse logic behind HTTP, tools over MCP)
    gets the same pass^k, trial by trial the same actions and outcomes, as that logic in process."""
    common: dict[str, Any] = {"domains": "retail", "trials": 8, "tasks": TASKS, "seed": 11, "concurrency": 4}
    local_db, service_db = sqlite_url(tmp_path / "local.db"), sqlite_url(tmp_path / "service.db")
    local = evaluate(db=local_db, policy="scripted:lookup-refuse", **common)
    service = evaluate(db=service_db, policy=reference_agent, **common)
    assert service.summary.status == "complete"
    assert service.summary.overall.pass_hat == local.summary.overall.pass_hat
    assert service.summary.overall.pass_hat[1] > 0  # some trials pass: the comparison is not of zeros
    local_trials, service_trials = (
        _trials(local_db, local.outcome.run_id),
        _trials(service_db, service.outcome.run_id),
    )
    assert len(service_trials) == len(TASKS) * 8
    for key, record in service_trials.items():
        twin = local_trials[key]
        assert (record.end_reason, record.reward) == (twin.end_reason, twin.reward), key
        assert [s.action for s in record.steps] == [s.action for s in twin.steps], key
        assert [s.observation for s in record.steps] == [s.observation for s in twin.steps], key


@pytest.mark.slow
def test_critiques_reach_the_service_as_they_reach_the_in_process_agent(
    reference_agent: str, tmp_path: Path
) -> None:
    """A critic rejecting every action, replies too (two rounds, then it runs): over MCP the
    rejection is the tool's result with the verdict, over HTTP a `critic` message; the service's
    revisions, verdicts and outcomes are the in-process agent's."""
    common: dict[str, Any] = {
        "domains": "retail",
        "trials": 2,
        "tasks": TASKS[:4],
        "seed": 11,
        "critic": "tests.critic.recording:RejectAllCritic",
        "verification": Verification(rounds=2, scope="all"),
    }
    local_db, service_db = sqlite_url(tmp_path / "local.db"), sqlite_url(tmp_path / "service.db")
    local = evaluate(db=local_db, policy="scripted:lookup-refuse", **common)
    service = evaluate(db=service_db, policy=reference_agent, **common)
    local_trials, service_trials = (
        _trials(local_db, local.outcome.run_id),
        _trials(service_db, service.outcome.run_id),
    )
    assert service_trials.keys() == local_trials.keys()
    revised = 0
    for key, record in service_trials.items():
        twin = local_trials[key]
        assert (record.end_reason, record.reward) == (twin.end_reason, twin.reward), key
        mine = [[(p.round, p.action, p.verdict) for p in s.proposals] for s in record.steps]
        assert mine == [[(p.round, p.action, p.verdict) for p in s.proposals] for s in twin.steps], key
        revised += sum(len(s.proposals) > 1 for s in record.steps)
    assert revised > 0


class _Faulty(BaseHTTPRequestHandler):
    """An agent service that opens sessions and then fails as its server's `mode` says."""

    protocol_version = "HTTP/1.1"
    mode = "error"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.endswith("/sessions"):
            return self._send(200, b"{}")
        mode = type(self).mode
        if mode == "error":
            return self._send(500, b'{"error": "boom"}')
        if mode == "garbage":
            return self._send(200, b'{"answer": 1}')
        if mode == "slow":
            time.sleep(8)
            return self._send(200, json.dumps({"reply": "late"}).encode())
        self.connection.shutdown(socket.SHUT_RDWR)  # hang up without an answer

    def do_DELETE(self) -> None:
        self._send(200, b"{}")

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with suppress(BrokenPipeError):  # castbench stopped waiting (the slow mode)
            self.wfile.write(data)


@pytest.mark.parametrize(
    ("mode", "end_reason", "words"),
    [
        ("error", "agent_error", "HTTP 500"),
        ("garbage", "agent_error", "without a 'reply'"),
        ("slow", "timeout", "overran the step time limit"),
    ],
)
def test_a_failing_service_fails_its_trials_not_the_run(
    tmp_path: Path, mode: str, end_reason: str, words: str
) -> None:
    handler = type("Handler", (_Faulty,), {"mode": mode})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    db = sqlite_url(tmp_path / "results.db")
    try:
        result = evaluate(
            db=db,
            domains="retail",
            policy=f"http://127.0.0.1:{server.server_address[1]}/agent",
            trials=2,
            tasks=["retail-test-0002"],
            time_limits=TimeLimits(step_s=2.5),  # room on a loaded machine; 'slow' takes 8 s
        )
    finally:
        server.shutdown()
    records = ResultsStore(db).trials(result.outcome.run_id)
    assert len(records) == 2 and result.outcome.ran == 2
    for record in records:
        assert record.status == "scored" and record.reward == 0.0, record.error
        assert record.end_reason == end_reason and words in (record.error or ""), record.error


def _serve(mode: str) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Faulty,), {"mode": mode}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_service_that_is_down_fails_the_command_in_one_line_before_any_trial(tmp_path: Path) -> None:
    server = _serve("error")
    port = server.server_address[1]
    server.shutdown()
    server.server_close()  # nothing listens on the port: connections are refused
    db = sqlite_url(tmp_path / "results.db")
    args = ["eval", "--domain", "retail", "--policy", f"http://127.0.0.1:{port}/agent", "--db", db]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2, result.output
    assert len(errors) == 1 and f"agent service http://127.0.0.1:{port}/agent" in errors[0]
    assert "not reachable" in errors[0] and "re-run the same command to resume" in errors[0]
    assert "Traceback" not in result.output
    assert ResultsStore(db).runs() == []  # no run, no trial: nothing was started


def test_a_service_going_down_mid_run_leaves_trials_unscored_and_resumable(tmp_path: Path) -> None:
    """The service answers the check and then hangs up on every message, then stops listening:
    in-flight trials are unscored (retried), the breaker stops the run; no agent_error zeros."""
    server = _serve("hangup")
    url = f"http://127.0.0.1:{server.server_address[1]}/agent"
    db = sqlite_url(tmp_path / "results.db")
    hangups = threading.Event()

    def vanish() -> None:
        hangups.wait(30)
        server.shutdown()
        server.server_close()

    threading.Thread(target=vanish, daemon=True).start()
    original = _Faulty.do_POST

    def post_then_vanish(self: _Faulty) -> None:
        original(self)
        if not self.path.endswith("/sessions"):
            hangups.set()

    tasks = [f"retail-test-{n:04d}" for n in range(1, 5)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_Faulty, "do_POST", post_then_vanish)
        with pytest.raises(ServerDown, match="agent service .* is down"):
            evaluate(db=db, domains="retail", policy=url, trials=2, tasks=tasks)
    store = ResultsStore(db)
    (run,) = store.runs()
    records = store.trials(run.id)
    assert run.status != "complete" and records
    assert all(record.status == "error" and record.reward is None for record in records)
    assert all(record.end_reason == "infra_error" for record in records), [r.error for r in records]


def test_service_urls_resolve_to_the_protocol_or_to_chat_completions() -> None:
    service = resolve("policy", "http://127.0.0.1:9/agent")
    assert (service.kind, service.transport, service.privileged) == ("service", "service", False)
    chat = resolve("policy", "http://127.0.0.1:9/v1/chat/completions?model=bot", model_factory=dict)
    assert chat.kind == "model"
    assert chat.params == {"model": "openai/bot", "api_base": "http://127.0.0.1:9/v1"}
    with pytest.raises(AgentSpecError, match="only a policy"):
        resolve("critic", "http://127.0.0.1:9/agent")
