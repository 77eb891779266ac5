"""A model server that answers garbage: every unusable answer is counted, per run and per domain,
in `eval`'s table, its `--output` JSON and `runs show`, and none passes for a usable one.

The loopback server's 'models' (see `fault_server.py`) answer by the request alone:
- the policy (prompted style) writes, by turn: prose with no JSON; a tool call with `message`
  but no `arguments`; a reply; prose again (3 of every 4 actions malformed);
- the critic (verifying every action, one round): a readable `valid` verdict for prose, a verdict
  cut off at max_tokens for the call without arguments, no JSON at all for the reply;
- the user: an empty message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from castbench._base.conversation import MalformedAction
from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench.domain import Domain
from tests.models.fault_server import FaultServer
from tests.support import sqlite_url

pytestmark = pytest.mark.slow  # model-backed runs through a real HTTP server

STEPS = 4
TASKS = 2
POLICY_ANSWERS = (
    {"content": "Sure! I would be glad to help you with that."},
    {"content": '{"action": "get_user_details", "message": "hi"}'},
    {"content": '{"action": "reply", "message": "Goodbye"}'},
)
CUT_VERDICT = '{ "verdict": "invalid", "failure_type": "wrong_tool", "explanation": "The ag'


def _garbage(body: dict[str, Any]) -> dict[str, Any]:
    messages = body["messages"]
    if body["model"] == "user":
        return {"content": ""}
    if body["model"] == "critic":
        question = messages[-1]["content"].rpartition("# Proposed action")[2]
        if "reply to the user" in question:
            return {"content": "I am not sure about this one."}
        if "get_user_details" in question:
            return {"content": CUT_VERDICT, "finish_reason": "length"}
        return {"content": '{"verdict": "valid", "failure_type": "none", "explanation": "ok"}'}
    turn = (len(messages) - 2) // 2  # system + opening, then an agent message and its answer per step
    return POLICY_ANSWERS[turn % len(POLICY_ANSWERS)]


def test_unusable_answers_are_counted_in_the_table_the_json_and_runs_show(
    retail: Domain, tmp_path: Path
) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    tasks = ",".join(task.id for task in retail.tasks("test")[:TASKS])
    with FaultServer(_garbage) as server:
        fast = f"api_base={server.base_url}&timeout=30&max_attempts=1"
        argv = ["eval", "--details", "--domain", "retail", "--tasks", tasks, "--trials", "1", "--seed", "3"]
        argv += ["--max-steps", str(STEPS), "--verify", "all", "--rounds", "1"]
        argv += ["--policy", f"openai/policy?style=prompted&{fast}", "--critic", f"openai/critic?{fast}"]
        argv += ["--user", f"openai/user?{fast}", "--db", db, "--output", str(tmp_path / "summary.json")]
        result = CliRunner().invoke(app, argv, terminal_width=200)
    assert result.exit_code == 0, result.output

    store = ResultsStore(db)
    records = store.trials(store.run("latest").id)
    proposals = [p for r in records for s in r.steps for p in s.proposals]
    assert len(proposals) == TASKS * STEPS
    malformed = [p.action for p in proposals if isinstance(p.action, MalformedAction)]
    no_arguments = [a for a in malformed if "without 'arguments'" in a.reason]
    assert no_arguments and all("'message'" in a.reason for a in no_arguments)  # reported, not a {} call

    outputs = json.loads((tmp_path / "summary.json").read_text())["domains"]["retail"]["outputs"]
    assert outputs["actions"] == TASKS * STEPS
    assert outputs["malformed_actions"] == TASKS * 3  # prose, no arguments, prose
    assert outputs["verdicts"] == TASKS * STEPS
    assert outputs["unparseable_verdicts"] == TASKS * 2  # the cut-off one and the one with no JSON
    assert outputs["user_turns"] == TASKS and outputs["unusable_user_turns"] == TASKS
    assert outputs["model_calls"] == TASKS * (STEPS + STEPS + 1) and outputs["failed_calls"] == 0
    assert outputs["tokens_in"] > 0 and outputs["tokens_out"] > 0

    table = result.output
    words = " ".join(table.replace("│", " ").split())
    assert f"malformed actions {TASKS * 3} / {TASKS * STEPS}" in words
    assert f"unparseable verdicts {TASKS * 2} / {TASKS * STEPS}" in words
    assert f"unusable user turns {TASKS} / {TASKS}" in words
    assert "tokens in / out per trial" in table and "model time per trial" in table

    verdicts = [p.verdict for p in proposals if p.verdict is not None]
    cut = [v for v in verdicts if v.parse_error and "cut off" in v.parse_error]
    assert cut and all(v.verdict == "invalid" and v.failure_type == "wrong_tool" for v in cut)
    unread = [v for v in verdicts if v.parse_error and "no JSON" in v.parse_error]
    assert unread and all("recorded as 'valid'" in (v.parse_error or "") for v in unread)

    shown = CliRunner().invoke(app, ["runs", "show", "latest", "--db", db], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert "critic unparseable" in shown.output and "without 'arguments'" in shown.output
    assert f"policy: {STEPS} call(s)" in shown.output and "tokens in" in shown.output
