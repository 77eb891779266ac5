"""An A2A agent as the policy (`--policy a2a+http://...`): castbench plays the customer over A2A,
the agent's tools run over MCP behind the run's critic, and the trials are those of the same
logic in process. An agent that is not there, fails or hangs behaves as an agent service does."""

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
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from castbench._agents.registry import AgentSpecError, resolve
from castbench._base.conversation import ReplyAction, UserTurn
from castbench._base.errors import ServerDown
from castbench._cli.app import app
from castbench._records.identity import agent_fingerprint
from castbench._records.provenance import SandboxState, placement_of
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench._trial.deadline import TimeLimits
from castbench._trial.episode import Limits, Verification
from tests.support import sqlite_url

pytestmark = pytest.mark.extra("bridges")  # A2A and MCP

ROOT = Path(__file__).resolve().parents[2]
TASKS = [f"retail-test-{n:04d}" for n in range(1, 13)] + ["retail-test-0023"]


SOLVED = ["retail-test-0008", "retail-test-0023"]
"""Tasks `scripted:lookup-refuse` solves (seed 11): correct trials, whoever ends them."""


def _example(*args: str) -> Iterator[str]:
    """examples/a2a_agent/agent.py as a subprocess on a free loopback port: its `--policy`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "a2a_agent" / "agent.py"), "--port", "0", *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("listening on a2a+http://127.0.0.1:"), line
    yield line.split()[-1]
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(scope="module")
def example_agent() -> Iterator[str]:
    yield from _example()


@pytest.fixture(scope="module")
def closing_agent() -> Iterator[str]:
    """The example agent deciding with lookup-refuse that closes with "Goodbye." and an end:
    its closing reply is the status message of a completed task."""
    yield from _example("--decider", "tests.bridges.closing_deciders:ClosingLookupRefuse")


def _trials(db: str, run_id: str) -> dict[tuple[str, int], Any]:
    return {(r.task_id, r.trial_index): r for r in ResultsStore(db).trials(run_id)}


@pytest.mark.slow
def test_retail_through_a2a_matches_the_same_logic_in_process(example_agent: str, tmp_path: Path) -> None:
    """The example A2A agent (lookup-refuse logic, tools over MCP) gets, trial by trial, the
    actions, observations and outcomes of `scripted:lookup-refuse` in process."""
    common: dict[str, Any] = {"domains": "retail", "trials": 2, "tasks": TASKS, "seed": 11, "concurrency": 4}
    local_db, a2a_db = sqlite_url(tmp_path / "local.db"), sqlite_url(tmp_path / "a2a.db")
    local = evaluate(db=local_db, policy="scripted:lookup-refuse", **common)
    remote = evaluate(db=a2a_db, policy=example_agent, **common)
    assert remote.summary.status == "complete"
    assert remote.summary.overall.pass_hat == local.summary.overall.pass_hat
    assert remote.summary.overall.pass_hat[1] > 0  # some trials pass: not a comparison of zeros
    local_trials, a2a_trials = _trials(local_db, local.outcome.run_id), _trials(a2a_db, remote.outcome.run_id)
    assert a2a_trials.keys() == local_trials.keys() and len(a2a_trials) == len(TASKS) * 2
    for key, record in a2a_trials.items():
        twin = local_trials[key]
        assert (record.end_reason, record.reward, record.seed) == (twin.end_reason, twin.reward, twin.seed), (
            key
        )
        assert [s.action for s in record.steps] == [s.action for s in twin.steps], key
        assert [s.observation for s in record.steps] == [s.observation for s in twin.steps], key
    placement = remote.summary.provenance.agents["policy"]  # type: ignore[union-attr]
    assert (
        placement.where == "service" and "A2A agent 'castbench example A2A agent' 1.0.0" in placement.detail
    )


@pytest.mark.parametrize(
    ("agent", "twin", "tasks"),
    [
        ("example_agent", "scripted:lookup-refuse", TASKS[:3]),
        # a closing reply in a completed task, rejected: the critique opens a new task, the agent's
        # revision closes again, and the trial ends as agent_stop as in process
        ("closing_agent", "tests.bridges.closing_deciders:ClosingLookupRefuse", SOLVED),
    ],
)
def test_the_critic_verifies_each_mcp_call_and_reply_of_an_a2a_agent(
    agent: str, twin: str, tasks: list[str], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A critic rejecting every action (two rounds, then it runs): each tool call over MCP is
    verified before it executes and each reply over A2A too; the revisions, verdicts and outcomes
    are the in-process agent's."""
    url = request.getfixturevalue(agent)
    common: dict[str, Any] = {
        "domains": "retail",
        "trials": 1,
        "tasks": tasks,
        "seed": 11,
        "critic": "tests.critic.recording:RejectAllCritic",
        "verification": Verification(rounds=2, scope="all"),
    }
    local_db, a2a_db = sqlite_url(tmp_path / "local.db"), sqlite_url(tmp_path / "a2a.db")
    local = evaluate(db=local_db, policy=twin, in_process=twin.startswith("tests."), **common)
    remote = evaluate(db=a2a_db, policy=url, **common)
    local_trials, a2a_trials = _trials(local_db, local.outcome.run_id), _trials(a2a_db, remote.outcome.run_id)
    assert a2a_trials.keys() == local_trials.keys()
    if agent == "closing_agent":
        assert {r.end_reason for r in a2a_trials.values()} == {"agent_stop"}
    revised = 0
    for key, record in a2a_trials.items():
        twin = local_trials[key]
        assert (record.end_reason, record.reward) == (twin.end_reason, twin.reward), key
        mine = [[(p.round, p.action, p.verdict) for p in s.proposals] for s in record.steps]
        assert mine == [[(p.round, p.action, p.verdict) for p in s.proposals] for s in twin.steps], key
        revised += sum(len(s.proposals) > 1 for s in record.steps)
    assert revised > 0


def test_an_a2a_agent_that_completes_its_task_ends_the_trial_as_agent_stop(
    closing_agent: str, example_agent: str, tmp_path: Path
) -> None:
    """A correct trial the A2A agent ends itself (its closing reply in a completed task) is
    `agent_stop`, rewarded 1, as the same logic ending in process; the agent that answers with
    messages and asks for anything else goes on until the customer leaves, as before."""
    common: dict[str, Any] = {"domains": "retail", "trials": 1, "tasks": SOLVED, "seed": 11}
    ended = evaluate(db=sqlite_url(tmp_path / "ended.db"), policy=closing_agent, **common)
    local = evaluate(
        db=sqlite_url(tmp_path / "local.db"),
        policy="tests.bridges.closing_deciders:ClosingLookupRefuse",
        in_process=True,
        **common,
    )
    asked = evaluate(db=sqlite_url(tmp_path / "asked.db"), policy=example_agent, **common)
    ended_trials = _trials(sqlite_url(tmp_path / "ended.db"), ended.outcome.run_id)
    local_trials = _trials(sqlite_url(tmp_path / "local.db"), local.outcome.run_id)
    asked_trials = _trials(sqlite_url(tmp_path / "asked.db"), asked.outcome.run_id)
    assert ended_trials.keys() == local_trials.keys() == asked_trials.keys() and len(ended_trials) == 2
    for key, record in ended_trials.items():
        assert (record.end_reason, record.reward) == ("agent_stop", 1.0), (key, record.error)
        assert (local_trials[key].end_reason, local_trials[key].reward) == ("agent_stop", 1.0), key
        assert [s.action for s in record.steps] == [s.action for s in local_trials[key].steps], key
        last = record.steps[-1]
        assert isinstance(last.action, ReplyAction) and last.action.end and "Goodbye." in last.action.text
        assert isinstance(last.observation, UserTurn) and "Goodbye" in last.observation.text
        assert record.grade is not None and record.grade.surface.ended_cleanly
        before = asked_trials[key]
        assert (before.end_reason, before.reward) == ("user_stop", 1.0), key
        assert not any(isinstance(s.action, ReplyAction) and s.action.ends for s in before.steps)


class _FakeAgent(BaseHTTPRequestHandler):
    """A minimal A2A agent: its card, and a JSON-RPC endpoint failing as `mode` says."""

    protocol_version = "HTTP/1.1"
    mode = "error"
    version = "1.0.0"
    state = "TASK_STATE_COMPLETED"
    artifact = False
    seen: list[dict[str, Any]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        card = {
            "name": "fake",
            "version": type(self).version,
            "supportedInterfaces": [{"url": f"http://127.0.0.1:{port}/rpc", "protocolBinding": "JSONRPC"}],
        }
        self._send(200, card)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        mode = type(self).mode
        if mode == "error":
            return self._send(
                200, {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": "boom"}}
            )
        if mode == "task":  # a task-based agent: working, then waiting for the customer
            type(self).seen.append(request)
            state = (
                "TASK_STATE_WORKING" if request["method"] == "SendMessage" else "TASK_STATE_INPUT_REQUIRED"
            )
            ask = {"role": "ROLE_AGENT", "parts": [{"text": "What is your email?"}]}
            task = {"id": "t1", "contextId": "c", "status": {"state": state, "message": ask}}
            return self._send(
                200,
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": task if "Get" in request["method"] else {"task": task},
                },
            )
        if mode == "hangup":
            self.connection.shutdown(socket.SHUT_RDWR)  # hang up without an answer
            return None
        if mode == "failed":
            task = {"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_FAILED"}}
            return self._send(200, {"jsonrpc": "2.0", "id": request["id"], "result": {"task": task}})
        if mode == "closing":  # "Goodbye." in a task in `state`, as its status message or an artifact
            type(self).seen.append(request)
            words = {"role": "ROLE_AGENT", "parts": [{"text": "Goodbye."}]}
            task = {"id": "t1", "contextId": "c", "status": {"state": type(self).state}}
            if type(self).artifact:
                task["artifacts"] = [{"artifactId": "a1", "parts": words["parts"]}]
            else:
                task["status"]["message"] = words  # type: ignore[index]
            return self._send(200, {"jsonrpc": "2.0", "id": request["id"], "result": {"task": task}})
        time.sleep(8)  # "slow": past the step time limit
        self._send(
            200, {"jsonrpc": "2.0", "id": request["id"], "result": {"message": {"parts": [{"text": "late"}]}}}
        )

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with suppress(BrokenPipeError):  # castbench stopped waiting (the slow mode)
            self.wfile.write(data)


def _serve(**attributes: Any) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_FakeAgent,), attributes))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize(
    ("mode", "end_reason", "words"),
    [
        ("error", "agent_error", "answered an error"),
        ("failed", "agent_error", "TASK_STATE_FAILED"),
        ("slow", "timeout", "overran the step time limit"),
    ],
)
def test_a_failing_or_hanging_a2a_agent_fails_its_trials_not_the_run(
    tmp_path: Path, mode: str, end_reason: str, words: str
) -> None:
    server = _serve(mode=mode)
    db = sqlite_url(tmp_path / "results.db")
    try:
        result = evaluate(
            db=db,
            domains="retail",
            policy=f"a2a+http://127.0.0.1:{server.server_address[1]}",
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


@pytest.mark.parametrize(
    ("state", "artifact", "end_reason", "words"),
    [
        ("TASK_STATE_COMPLETED", False, "agent_stop", None),
        ("TASK_STATE_COMPLETED", True, "agent_stop", None),  # the closing words as an artifact
        ("TASK_STATE_INPUT_REQUIRED", False, "user_stop", None),  # a turn: the customer leaves
        ("TASK_STATE_FAILED", False, "agent_error", "its task ended TASK_STATE_FAILED: Goodbye."),
        ("TASK_STATE_REJECTED", False, "agent_error", "its task ended TASK_STATE_REJECTED: Goodbye."),
        ("TASK_STATE_CANCELED", True, "agent_error", "its task ended TASK_STATE_CANCELED: Goodbye."),
        ("TASK_STATE_DONE", False, "agent_error", "'TASK_STATE_DONE', which A2A 1.0 does not define"),
    ],
)
def test_the_state_of_an_a2a_agents_task_says_how_its_reply_ends_the_trial(
    tmp_path: Path, state: str, artifact: bool, end_reason: str, words: str | None
) -> None:
    """A "Goodbye." in a task: completed (A2A's terminal success) is the agent's own ending, graded
    (agent_stop, not agent_error, whoever ends it); input-required is a turn the customer answers
    (the scripted user takes its leave: user_stop, the agent did not end it); failed, rejected
    and canceled are the agent's failure with its words kept; an unknown state too."""
    server = _serve(mode="closing", state=state, artifact=artifact, seen=[])
    db = sqlite_url(tmp_path / "results.db")
    try:
        result = evaluate(
            db=db,
            domains="retail",
            policy=f"a2a+http://127.0.0.1:{server.server_address[1]}",
            trials=1,
            tasks=["retail-test-0002"],
        )
        seen = server.RequestHandlerClass.seen  # type: ignore[attr-defined]
    finally:
        server.shutdown()
    (record,) = ResultsStore(db).trials(result.outcome.run_id)
    assert record.status == "scored" and record.end_reason == end_reason, record.error
    assert len(seen) == 1  # one message each way: whatever the state, the trial is over
    if words is not None:
        assert words in (record.error or "") and record.reward == 0.0 and not record.steps, record.error
        return
    (step,) = record.steps
    assert isinstance(step.action, ReplyAction) and step.action.text == "Goodbye."
    assert step.action.end == (end_reason == "agent_stop")
    assert isinstance(step.observation, UserTurn) and "Goodbye" in step.observation.text
    assert record.error is None and record.grade is not None


def test_a_task_based_a2a_agent_is_polled_and_its_task_continued(tmp_path: Path) -> None:
    """An agent answering with a task: castbench polls it (`GetTask`) until it waits for input,
    takes the reply from its status message and sends the customer's answer on the same task."""
    server = _serve(mode="task", seen=[])
    db = sqlite_url(tmp_path / "results.db")
    try:
        result = evaluate(
            db=db,
            domains="retail",
            policy=f"a2a+http://127.0.0.1:{server.server_address[1]}",
            trials=1,
            tasks=["retail-test-0002"],
            limits=Limits(max_steps=4),
        )
        seen = server.RequestHandlerClass.seen  # type: ignore[attr-defined]
    finally:
        server.shutdown()
    (record,) = ResultsStore(db).trials(result.outcome.run_id)
    assert record.status == "scored" and record.steps, record.error
    assert [s.action.text for s in record.steps][:2] == ["What is your email?"] * 2  # type: ignore[union-attr]
    sends = [r["params"]["message"] for r in seen if r["method"] == "SendMessage"]
    assert any(r["method"] == "GetTask" and r["params"]["id"] == "t1" for r in seen)
    assert "taskId" not in sends[0] and all(m["taskId"] == "t1" for m in sends[1:]) and len(sends) > 1
    assert len({m["contextId"] for m in sends}) == 1  # one trial, one context


def test_an_a2a_agent_that_is_not_there_fails_the_command_in_one_line(tmp_path: Path) -> None:
    server = _serve()
    port = server.server_address[1]
    server.shutdown()
    server.server_close()  # nothing listens: connections are refused
    db = sqlite_url(tmp_path / "results.db")
    args = ["eval", "--domain", "retail", "--policy", f"a2a+http://127.0.0.1:{port}", "--db", db]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2, result.output
    assert len(errors) == 1 and f"A2A agent http://127.0.0.1:{port} is not reachable" in errors[0]
    assert "Traceback" not in result.output
    assert ResultsStore(db).runs() == []


def test_an_a2a_agent_going_away_mid_run_leaves_trials_unscored_and_resumable(tmp_path: Path) -> None:
    """The agent serves its card, then hangs up on every message, then stops listening: the
    trials in flight are unscored (retried), the breaker stops the run; no agent_error zeros."""
    server = _serve(mode="hangup")
    db = sqlite_url(tmp_path / "results.db")
    hangups = threading.Event()

    def vanish() -> None:
        hangups.wait(30)
        server.shutdown()
        server.server_close()

    threading.Thread(target=vanish, daemon=True).start()
    original = _FakeAgent.do_POST

    def post_then_vanish(self: _FakeAgent) -> None:
        original(self)
        hangups.set()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_FakeAgent, "do_POST", post_then_vanish)
        with pytest.raises(ServerDown, match="is down"):
            evaluate(
                db=db,
                domains="retail",
                policy=f"a2a+http://127.0.0.1:{server.server_address[1]}",
                trials=2,
                tasks=TASKS[:4],
            )
    store = ResultsStore(db)
    (run,) = store.runs()
    records = store.trials(run.id)
    assert run.status != "complete" and records
    assert all(r.status == "error" and r.end_reason == "infra_error" for r in records), [
        r.error for r in records
    ]


def test_the_agent_card_is_part_of_the_run_identity_and_provenance() -> None:
    first, second = _serve(version="1.0.0"), _serve(version="2.0.0")
    try:
        a = resolve("policy", f"a2a+http://127.0.0.1:{first.server_address[1]}")
        card_url = f"a2a+http://127.0.0.1:{second.server_address[1]}/.well-known/agent-card.json"
        b = resolve("policy", card_url)
    finally:
        first.shutdown()
        second.shutdown()
    assert (a.kind, a.transport) == ("service", "a2a") and a.params["card"]["version"] == "1.0.0"
    assert b.params["card"]["version"] == "2.0.0" and b.name == f"http://127.0.0.1:{second.server_address[1]}"
    assert b.params["rpc_url"] == f"http://127.0.0.1:{second.server_address[1]}/rpc"
    redeployed = replace(a, params={**a.params, "card": b.params["card"]})
    assert agent_fingerprint(redeployed) != agent_fingerprint(a)  # another card: another run
    placement = placement_of(a, SandboxState(available=False, reason="none"))
    assert placement.describe() == f"agent service at {a.name} (A2A agent 'fake' 1.0.0)"
    with pytest.raises(AgentSpecError, match="only a policy"):
        resolve("critic", f"a2a+http://127.0.0.1:{first.server_address[1]}")
