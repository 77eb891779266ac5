"""`castbench eval` with model-backed policy, critic and user, through the real litellm client,
against a server that injects provider faults.

The server's 'model' replays castbench's scripted agents (see `responder.py`), so a fault-free
run passes everything and any difference a fault makes is visible. Infrastructure faults must be
retried, reported, and change nothing that is scored; an agent fault (tool-call arguments that
are not JSON) must be scored as the agent's failure; no trial may be lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from castbench._base.conversation import ToolCallAction, canonical_action
from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench.domain import Domain
from tests.models.fault_server import FaultServer
from tests.models.responder import ScriptedResponder, unique_openings
from tests.support import sqlite_url

pytestmark = pytest.mark.slow  # model-backed runs through a real HTTP server

TRIALS = 2
FAST = "timeout=1.0&resend_timeouts=true&backoff_s=0.01&backoff_max_s=0.05&max_attempts=4"
VARYING = ("usage", "retried_trials", "cost_per_trial", "_seconds", "model_s", "failed_calls", "model_calls")
VARYING += ("tokens_in", "tokens_out")
"""Summary fields that report the faults themselves (retries, time and tokens spent on them)."""


def _tasks(retail: Domain, count: int = 3) -> list[str]:
    return [task.id for task in unique_openings(retail.tasks("test"))[:count]]


def _eval(
    server: FaultServer,
    db: str,
    tasks: list[str],
    *args: str,
    policy_settings: str = "",
    trials: int = TRIALS,
) -> Any:
    def spec(role: str, extra: str = "") -> str:
        settings = dict(item.split("=", 1) for item in FAST.split("&"))
        settings |= dict(item.split("=", 1) for item in extra.strip("&").split("&") if item)  # a repeated
        # parameter is refused (issue #60): the role's own settings replace the fast ones
        query = "&".join(f"{key}={value}" for key, value in settings.items())
        return f"openai/{role}?api_base={server.base_url}&{query}"

    argv = ["eval", "--details", "--domain", "retail", "--tasks", ",".join(tasks)]
    argv += ["--trials", str(trials), "--seed", "3"]
    argv += ["--policy", spec("policy", policy_settings), "--critic", spec("critic"), "--user", spec("user")]
    return CliRunner().invoke(app, [*argv, "--db", db, *args])


def _run(db: str) -> tuple[dict[str, Any], list[TrialRecord]]:
    store = ResultsStore(db)
    row = store.run("latest")
    return {"status": row.status}, store.trials(row.id)


def _scored(value: Any) -> Any:
    """What a run scored: everything in its domains' reports but the reports of the faults."""
    if isinstance(value, dict) and "domains" in value:
        return _scored(value["domains"])
    if isinstance(value, dict):
        return {key: _scored(item) for key, item in value.items() if not key.endswith(VARYING)}
    return value


def _actions(records: list[TrialRecord]) -> dict[tuple[str, int], list[str]]:
    return {
        (r.task_id, r.trial_index): [canonical_action(s.action) for s in r.steps if s.action is not None]
        for r in records
    }


@pytest.fixture(scope="module")
def baseline(retail: Domain, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The fault-free run the faulty ones must equal."""
    folder = tmp_path_factory.mktemp("baseline")
    db = sqlite_url(folder / "runs.db")
    with FaultServer(ScriptedResponder(retail, retail.tasks("test"))) as server:
        result = _eval(server, db, _tasks(retail), "--output", str(folder / "summary.json"))
    assert result.exit_code == 0, result.output
    summary = json.loads((folder / "summary.json").read_text())
    _, records = _run(db)
    return {"summary": summary, "actions": _actions(records)}


def test_the_fault_free_run_passes_everything(baseline: dict[str, Any]) -> None:
    report = baseline["summary"]["overall"]
    assert report["pass_hat"]["1"] == 1.0 and report["n_trials"] == 3 * TRIALS
    assert set(report["usage"]) == {"policy", "critic", "user"}
    assert all(usage["calls"] > 0 and usage["retries"] == 0 for usage in report["usage"].values())
    assert report["end_reasons"] == {"user_stop": 3 * TRIALS}


@pytest.mark.parametrize("fault", ["rate_limit", "server_error", "slow", "empty"])
def test_infrastructure_faults_are_retried_and_change_nothing_scored(
    fault: str,
    baseline: dict[str, Any],
    retail: Domain,
    fault_server: Callable[..., FaultServer],
    tmp_path: Path,
) -> None:
    server = fault_server(rates={fault: 0.2}, seed=11)
    db = sqlite_url(tmp_path / "runs.db")
    result = _eval(server, db, _tasks(retail), "--output", str(tmp_path / "summary.json"))
    assert result.exit_code == 0, result.output
    assert server.faults[fault] > 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert _scored(summary) == _scored(baseline["summary"])
    run, records = _run(db)
    assert run["status"] == "complete" and len(records) == 3 * TRIALS
    assert all(record.status == "scored" for record in records)  # nothing lost
    assert _actions(records) == baseline["actions"]
    retries = sum(usage["retries"] for usage in summary["overall"]["usage"].values())
    restarts = sum(record.attempts - 1 for record in records)
    assert retries + 4 * restarts >= server.faults[fault]  # each fault: a retry, or one of a failed call's 4


def test_the_prompted_style_through_faults_scores_like_function_calling(
    baseline: dict[str, Any], retail: Domain, fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    server = fault_server(rates={"rate_limit": 0.1, "server_error": 0.1}, seed=5)
    db = sqlite_url(tmp_path / "runs.db")
    result = _eval(
        server, db, _tasks(retail), "--output", str(tmp_path / "s.json"), policy_settings="&style=prompted"
    )
    assert result.exit_code == 0, result.output
    assert _scored(json.loads((tmp_path / "s.json").read_text())) == _scored(baseline["summary"])
    assert all("tools" not in body for body in server.bodies if body["model"] == "policy")


def test_malformed_tool_calls_are_the_agents_failures(
    baseline: dict[str, Any], retail: Domain, fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    summaries = []
    for attempt in range(2):  # the same seed twice: the same faults, the same summary
        server = fault_server(rates={"malformed": 0.2}, seed=7)
        db = sqlite_url(tmp_path / f"runs{attempt}.db")
        result = _eval(server, db, _tasks(retail), "--output", str(tmp_path / f"s{attempt}.json"))
        assert result.exit_code == 0, result.output
        summaries.append(_scored(json.loads((tmp_path / f"s{attempt}.json").read_text())))
        _, records = _run(db)
        assert len(records) == 3 * TRIALS and all(record.status == "scored" for record in records)
        broken = [
            step
            for record in records
            for step in record.steps
            if isinstance(step.action, ToolCallAction) and isinstance(step.action.arguments, str)
        ]
        assert len(broken) == server.faults["malformed"] > 0
        assert all(
            step.observation is not None and "not valid JSON" in step.observation.content for step in broken
        )
        assert all(record.attempts == 1 for record in records)  # the agent's fault: never retried
    assert summaries[0] == summaries[1]
    assert summaries[0]["retail"]["pass_hat"]["1"] < 1.0  # it cost the agent


def test_a_conversation_the_provider_refuses_is_the_agents_failure(
    retail: Domain, fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    """A 400 "context length exceeded" is caused by the agent's own conversation: the trial
    scores 0 as its failure, is not retried, and its task stays in pass^k (counting it as an
    infrastructure error would drop exactly the tasks the agent cannot handle)."""
    server = fault_server(rates={"context_length": 0.15}, seed=4, agent_models=("policy",))
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    result = _eval(server, db, _tasks(retail), "--output", str(tmp_path / "s.json"))
    assert result.exit_code == 0, result.output
    run, records = _run(db)
    assert run["status"] == "complete" and len(records) == 3 * TRIALS
    refused = [record for record in records if "maximum context length" in (record.error or "")]
    assert refused and server.faults["context_length"] > 0
    assert all(r.status == "scored" and r.end_reason == "agent_error" and r.reward == 0.0 for r in refused)
    assert all(record.attempts == 1 for record in records)  # never retried: it would be refused again
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["status"] == "complete" and summary["overall"]["n_tasks"] == 3
    assert summary["overall"]["pass_hat"]["1"] < 1.0


def test_every_fault_at_once(
    retail: Domain, fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    kinds = ("rate_limit", "server_error", "slow", "empty", "malformed")
    server = fault_server(rates=dict.fromkeys(kinds, 0.04), seed=2)
    db = sqlite_url(tmp_path / "runs.db")
    result = _eval(server, db, _tasks(retail), "--output", str(tmp_path / "s.json"))
    assert result.exit_code == 0, result.output
    _, records = _run(db)
    assert len(records) == 3 * TRIALS and all(record.status == "scored" for record in records)
    summary = json.loads((tmp_path / "s.json").read_text())["overall"]
    assert sum(usage["retries"] for usage in summary["usage"].values()) > 0
    assert sum(server.faults.values()) > 5


def test_an_outage_longer_than_a_call_restarts_the_trial_from_its_seed(
    baseline: dict[str, Any], retail: Domain, fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    server = fault_server(fail_first=1)
    db = sqlite_url(tmp_path / "runs.db")
    result = _eval(
        server, db, _tasks(retail), "--output", str(tmp_path / "s.json"), policy_settings="&max_attempts=1"
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["overall"]["retried_trials"] == 1 and "retried" in result.output
    assert _scored(summary) == _scored(baseline["summary"])
    _, records = _run(db)
    assert sorted(record.attempts for record in records) == [1] * (3 * TRIALS - 1) + [2]


def test_a_trial_that_never_gets_through_is_stored_as_an_error(
    retail: Domain, fault_server: Callable[..., FaultServer], db_url: str, tmp_path: Path
) -> None:
    server = fault_server(fail_first=10_000)
    db = db_url
    tasks = _tasks(retail, 1)
    result = _eval(server, db, tasks, "--output", str(tmp_path / "s.json"), policy_settings="&max_attempts=2")
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "INCOMPLETE" in said and tasks[0] in said  # at the top, naming it
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["status"] == "incomplete" and summary["overall"]["missing_tasks"] == [f"retail/{tasks[0]}"]
    assert summary["overall"]["pass_hat"]["1"] == 0.0  # still in the denominator, as a failure
    run, records = _run(db)
    assert run["status"] == "incomplete"
    assert len(records) == TRIALS
    for record in records:
        assert record.status == "error" and record.end_reason == "infra_error" and record.attempts == 3
        assert record.reward is None and "transient error after 2 attempt(s)" in (record.error or "")
    assert server.requests == TRIALS * 3 * 2


def test_bad_credentials_stop_the_run_at_once(
    retail: Domain, fault_server: Callable[..., FaultServer], db_url: str
) -> None:
    server = fault_server(rates={"unauthorized": 1.0})
    db = db_url
    result = _eval(server, db, _tasks(retail))
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "fatal error" in said and "re-run to resume" in said
    run, records = _run(db)
    assert run["status"] == "failed" and server.requests == 1
    (stopped,) = records  # the trial the fatal error stopped, kept unscored: a re-run shows its next try
    assert stopped.status != "scored" and stopped.reward is None and "401" in (stopped.error or "")


def test_max_cost_stops_cleanly_and_a_rerun_resumes(
    retail: Domain, fault_server: Callable[..., FaultServer], db_url: str
) -> None:
    server = fault_server()
    db = db_url
    priced = "&input_cost_per_token=0.000001&output_cost_per_token=0.000002"
    tasks = _tasks(retail, 2)
    stopped = _eval(server, db, tasks, "--max-cost", "0.000001", policy_settings=priced, trials=1)
    assert stopped.exit_code == 1, stopped.output
    said = " ".join(stopped.output.split())
    assert "cost limit reached" in said and "re-run the same command to resume" in said
    run, records = _run(db)
    assert run["status"] == "stopped" and len(records) == 1  # one trial, then the budget was spent
    assert records[0].usage["policy"].cost
    resumed = _eval(server, db, tasks, policy_settings=priced, trials=1)
    assert resumed.exit_code == 0, resumed.output
    assert "1 trials run, 1 reused" in " ".join(resumed.output.split())
    run, records = _run(db)
    assert run["status"] == "complete" and len(records) == 2


def test_the_user_model_never_leaks_its_instructions(
    retail: Domain, fault_server: Callable[..., FaultServer], db_url: str
) -> None:
    server = fault_server()
    result = _eval(server, db_url, _tasks(retail, 1))
    assert result.exit_code == 0, result.output
    task = retail.task(_tasks(retail, 1)[0])
    secret = task.scenario.instructions[:100]
    for body in server.bodies:
        contents = [str(message.get("content")) for message in body["messages"]]
        if body["model"] == "user":
            assert secret in contents[0]
        else:
            assert not any(secret in content for content in contents)
