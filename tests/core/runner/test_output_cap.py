"""One output of an agent is capped (1 MB of JSON): a 2 MB tool argument or reply ends the trial
as `agent_error` saying so, and the store keeps nothing of it (a 50 MB argument grew a store from
18 MB to 819 MB and kept `runs show` busy for minutes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._agents.views import Briefing, PolicyView
from castbench._base.conversation import ReplyAction, ToolCallAction
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from tests.support import sqlite_url


class HugePolicy:
    """Sends a 2 MB tool argument (`what=call`) or reply (`what=reply`)."""

    def __init__(self, briefing: Briefing, what: str = "call") -> None:
        self.what = what

    def propose(self, view: PolicyView) -> ToolCallAction | ReplyAction:
        if self.what == "call":
            return ToolCallAction(name="find_user_id_by_email", arguments={"email": "x" * 2_000_000})
        return ReplyAction(text="y" * 2_000_000)


@pytest.mark.parametrize("what", ["call", "reply"])
def test_an_oversized_output_ends_its_trial_and_is_not_stored(tmp_path: Path, what: str) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    policy = f"tests.core.runner.test_output_cap:HugePolicy?what={what}"
    outcome = evaluate(
        db=db, domains="retail", policy=policy, tasks=["retail-test-0001"], trials=1, in_process=True
    ).outcome
    (record,) = ResultsStore(db).trials(outcome.run_id)
    assert record.end_reason == "agent_error" and record.reward == 0.0
    assert "MB of JSON, over the 1 MB cap on one output" in (record.error or "")
    assert len(record.model_dump_json()) < 10_000
    assert (tmp_path / "runs.db").stat().st_size < 1_000_000


def test_runs_show_cuts_long_texts_and_says_so(tmp_path: Path) -> None:
    """A long (allowed) reply is shown cut at 2,000 characters with its length said."""
    from tests.support import invoke

    db = sqlite_url(tmp_path / "runs.db")
    policy = "tests.core.runner.test_output_cap:LongReplyPolicy"
    outcome = evaluate(
        db=db, domains="retail", policy=policy, tasks=["retail-test-0001"], trials=1, in_process=True
    )
    shown = invoke("runs", "show", outcome.outcome.run_id, "--db", db, "--task", "retail-test-0001")
    text = " ".join(shown.output.split())
    assert shown.exit_code == 0, shown.output
    assert "900,002 characters, the first 2,000 shown; all in `castbench export`" in text
    assert "z" * 2100 not in shown.output


class LongReplyPolicy:
    def __init__(self, briefing: Briefing) -> None:
        pass

    def propose(self, view: PolicyView) -> ReplyAction:
        return ReplyAction(text="z" * 900_000)
