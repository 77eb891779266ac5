"""A model server that is down fails fast, against real closed ports (no patching): checked with
one request before the first trial, and given up on mid-run after `THRESHOLD` connection
failures in a row across trials; the run is stored as `failed` and the message says which server
and how to resume."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from castbench._agents.models import client  # noqa: F401  (litellm imported up front: not timed below)
from castbench._agents.models.breaker import THRESHOLD
from castbench._agents.models.retry import RetryPolicy
from castbench._cli.app import app
from castbench.domain import Domain
from tests.models.fault_server import FaultServer
from tests.models.responder import ScriptedResponder, unique_openings

FAST = "timeout=1.0&backoff_s=0.01&backoff_max_s=0.05&max_attempts=4"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _eval(api_base: str, db: str, tasks: list[str], trials: int = 2) -> Result:
    argv = ["eval", "--domain", "retail", "--tasks", ",".join(tasks), "--trials", str(trials)]
    argv += ["--policy", f"openai/policy?{FAST}", "--api-base", api_base, "--db", db]
    return CliRunner().invoke(app, argv)


def _runs(db: str) -> list[dict[str, Any]]:
    listed = CliRunner().invoke(app, ["runs", "list", "--db", db, "--json"])
    assert listed.exit_code == 0, listed.output
    return json.loads(listed.output)  # type: ignore[no-any-return]


def test_a_server_that_is_down_is_found_before_the_first_trial(retail: Domain, tmp_path: Path) -> None:
    api_base = f"http://127.0.0.1:{_closed_port()}/v1"
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    started = time.monotonic()
    result = _eval(api_base, db, [retail.tasks("test")[0].id])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and time.monotonic() - started < 10, said
    assert f"model server {api_base} for the policy is not reachable" in said
    assert "start it (or fix --api-base), then re-run the same command" in said and "finished" not in said
    assert _runs(db) == []  # no run was opened, so none claims to be running or complete


def test_a_server_that_goes_down_mid_run_stops_the_run_as_failed(
    retail: Domain, fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    tasks = unique_openings(retail.tasks("test"))[:4]
    scripted = ScriptedResponder(retail, retail.tasks("test"))
    answered = 0
    server: FaultServer | None = None

    def dies_after_a_while(body: dict[str, Any]) -> dict[str, Any]:
        nonlocal answered
        answered += 1
        if answered == 12:  # close the port: every later connection is refused
            assert server is not None
            threading.Thread(target=server.__exit__).start()
        return scripted(body)

    server = fault_server(dies_after_a_while)
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    started = time.monotonic()
    result = _eval(server.base_url, db, [task.id for task in tasks])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and time.monotonic() - started < 60, said
    assert f"model server {server.base_url} is down: {THRESHOLD} connection failures in a row" in said
    assert "re-run the same command to resume" in said
    (run,) = _runs(db)
    assert run["status"] == "failed" and run["trials_stored"] < len(tasks) * 2


def test_the_default_retry_policy_gives_a_dead_server_up_within_a_minute() -> None:
    """The longest the first call can wait between its `THRESHOLD` refused attempts."""
    policy = RetryPolicy()
    waits = [min(policy.backoff_max_s, policy.backoff_s * 2**attempt) for attempt in range(THRESHOLD - 1)]
    assert policy.max_attempts >= THRESHOLD and sum(waits) < 60
