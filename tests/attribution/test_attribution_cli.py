"""Attribution where a team reads it: `eval --output`, `runs why` (with and without an LLM judge on
a loopback server), the viewer's page and the board's column."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from castbench._records.store import ResultsStore
from castbench_analyses.why_judge import LLMJudge, agreement
from castbench_boards.render import board_markdown
from castbench_boards.viewer.payload import trial_payload
from tests.models.fault_server import FaultServer
from tests.support import invoke, sqlite_url

TASKS = "retail-test-0002,retail-test-0004,retail-test-0005,retail-test-0006"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A store with a noisy run (its failures the agent's) and an oracle run with a user who
    leaves mid-task (its failures the user's); the latter's summary JSON."""
    folder = tmp_path_factory.mktemp("why")
    url = sqlite_url(folder / "r.db")
    for policy, user in (("scripted:noisy?p=0.9&recover=0", "scripted"), ("oracle", "scripted:quitter")):
        result = invoke(
            "eval", "--details", "--domain", "retail", "--policy", policy, "--user", user, "--trials", "2",
            "--tasks", TASKS, "--db", url, "--output", str(folder / f"{user}.json"),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "blamed: user" in result.output
    return url, folder / "scripted:quitter.json"


def _run_ids(url: str) -> dict[str, str]:
    return {json.loads(row.config_json)["user"]: row.id for row in ResultsStore(url).runs()}


def test_summary_json_has_the_shares(runs: tuple[str, Path]) -> None:
    summary = json.loads(runs[1].read_text())
    shares = summary["overall"]["attribution"]
    assert shares["by_party"] == {"user": shares["not_passed"]} and shares["not_passed"] > 0
    assert shares["by_cause"] == {"ended_early": shares["not_passed"]}
    assert shares["party_shares"] == {"user": 1.0}
    assert shares["simulator_fault_trials"] >= shares["not_passed"]


def test_runs_why_json_has_one_object_per_failed_trial(runs: tuple[str, Path]) -> None:
    url = runs[0]
    ids = _run_ids(url)
    result = invoke("runs", "why", ids["scripted"], "--db", url, "--json")
    assert result.exit_code == 0, result.output
    everything = json.loads(result.output)
    rows = [row for row in everything if row["grading"] == "plain"]
    store = ResultsStore(url)
    failed = [r for r in store.trials(ids["scripted"]) if not r.passed]
    assert len(rows) == len(failed) > 0
    # then one per trial that passed plain and failed strict, with the write and the user turn
    strict = [r for r in store.trials(ids["scripted"]) if r.passed and r.strict_passed is False]
    assert [(row["task"], row["trial"]) for row in everything if row["grading"] == "strict"] == [
        (r.task_id, r.trial_index) for r in strict
    ]
    for row in everything[len(rows) :]:
        assert row["rule"] == "strict_policy_break" and row["write"] and "user_turn" in row
    for row in rows:
        assert {"task", "trial", "step", "party", "cause"} <= set(row)
        assert row["party"] == "agent" and row["cause"] in {"hallucination", "wrong_tool", "domain_violation"}
        assert isinstance(row["step"], int)


def test_runs_why_groups_failures_by_cause(runs: tuple[str, Path]) -> None:
    url = runs[0]
    result = invoke("runs", "why", _run_ids(url)["scripted:quitter"], "--db", url)
    assert result.exit_code == 0, result.output
    assert "ended_early" in result.output and "user" in result.output and "100%" in result.output


@pytest.fixture
def judge_server() -> Iterator[FaultServer]:
    """A loopback chat server answering as a judge would: the first step whose tool result is an
    error, as a hallucination (an answer it cannot read for task 0004)."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        text = body["messages"][-1]["content"]
        if "task retail-test-0004," in text:
            return {"content": "I cannot tell."}
        step = next(
            (int(line.split()[1].rstrip("]")) for line in text.splitlines() if "tool: ERROR" in line), None
        )
        return {"content": json.dumps({"step": step, "cause": "hallucination", "reason": "an invented id"})}

    with FaultServer(respond) as server:
        yield server


def test_llm_judge_and_its_agreement_with_the_rules(
    runs: tuple[str, Path], judge_server: FaultServer
) -> None:
    url = runs[0]
    run_id = _run_ids(url)["scripted"]
    result = invoke(
        "runs",
        "why",
        run_id,
        "--db",
        url,
        "--judge",
        "openai/judge",
        "--api-base",
        judge_server.base_url,
        "--json",
    )
    assert result.exit_code == 0, result.output
    rows = [row for row in json.loads(result.output) if row["grading"] == "plain"]
    assert judge_server.requests == len(rows) > 0
    for row in rows:
        unreadable = row["task"] == "retail-test-0004"
        assert row["judge"]["cause"] == ("incomplete_reply" if unreadable else "hallucination"), row
        assert row["judge"]["reason"].startswith("unreadable") == unreadable
    system = judge_server.bodies[0]["messages"][0]["content"]
    assert "leaked_goal" in system and "wrong_tool" in system
    table = invoke(
        "runs", "why", run_id, "--db", url, "--judge", "openai/judge", "--api-base", judge_server.base_url
    )
    assert "agrees with the rules on" in table.output


def test_agreement_counts_party_cause_and_step(runs: tuple[str, Path], judge_server: FaultServer) -> None:
    from castbench._results.attribution import attribute

    store = ResultsStore(runs[0])
    records = [r for r in store.trials(_run_ids(runs[0])["scripted:quitter"]) if not r.passed]
    rules = [a for r in records if (a := attribute(r)) is not None]
    judge = LLMJudge("openai/judge", api_base=judge_server.base_url)
    judged = [judge.judge(r) for r in records]
    assert all(j.source == "judge" and j.party == "agent" for j in judged)
    result = agreement(rules, judged)
    read = [j for j in judged if not j.evidence.detail.startswith("unreadable")]
    assert result.judged == len(read) > 0 and result.judged + result.unreadable == len(rules)
    assert result.party == 0.0 and result.cause == 0.0


def test_viewer_payload_marks_the_decisive_step(runs: tuple[str, Path]) -> None:
    store = ResultsStore(runs[0])
    record = next(r for r in store.trials(_run_ids(runs[0])["scripted:quitter"]) if not r.passed)
    payload = trial_payload(record)
    assert (
        payload["attribution"]["party"] == "user" and payload["attribution"]["step"] == record.steps[-1].index
    )
    passed = next(r for r in store.trials(_run_ids(runs[0])["scripted"]) if r.passed)
    assert "attribution" not in trial_payload(passed)


def test_board_shows_whose_fault_the_failures_were() -> None:
    from castbench_boards.render import Board
    from castbench_boards.rows import BoardRow

    row = BoardRow(
        name="x", slug="x", note="", run_id="r-1", policy="p", critic="none", user="scripted", traits=None,
        privileged=[], tasks=1, trials=1, metrics={}, curve=[1.0], false_flag_rate=None, detection_rate=None,
        cost_per_trial=None, failures_blamed={"agent": 0.75, "user": 0.25, "harness": 0.0},
    )  # fmt: skip
    board = Board(
        name="b", title="B", description="", domains={"retail": 1}, split="test", trials=1, metrics=[],
        rank_by="pass^1", allow_privileged=True, rows=[row],
    )  # fmt: skip
    assert "agent 75% · user 25% · harness 0%" in board_markdown(board)
