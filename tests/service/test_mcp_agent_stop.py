"""An MCP client that is the whole agent ends the conversation itself: with a closing
`respond_to_user` (`end_conversation`), or by closing its session after its work. Either way the
trial ends as `agent_stop` and a correct one is rewarded 1 (it was `max_steps`, reward 0)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="MCP: pip install -e '.[service]'")
pytestmark = pytest.mark.extra("service")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from castbench import evaluate  # noqa: E402
from castbench._base.conversation import ReplyAction, ToolCallAction  # noqa: E402
from castbench._records.store import ResultsStore  # noqa: E402
from castbench._records.trial import TrialRecord  # noqa: E402

TASK = "retail-test-0002"


def _oracle_moves(db_url: str) -> list[tuple[str, dict[str, Any]]]:
    """What the oracle does in this trial (trial 0, run seed 0: the server's defaults), as MCP
    calls, without its closing message."""
    result = evaluate(db=db_url, domains="retail", tasks=[TASK], policy="oracle", trials=1, in_process=True)
    (record,) = ResultsStore(db_url).trials(result.outcome.run_id)
    moves: list[tuple[str, dict[str, Any]]] = []
    for step in record.steps[:-1]:
        if isinstance(step.action, ReplyAction):
            moves.append(("respond_to_user", {"message": step.action.text}))
        elif isinstance(step.action, ToolCallAction):
            assert isinstance(step.action.arguments, dict)
            moves.append((step.action.name, dict(step.action.arguments)))
    return moves


def _serve(record_path: Path) -> StdioServerParameters:
    args = ["-c", "from castbench._cli.app import main; main()", "mcp", "serve", "--domain", "retail"]
    args += ["--task", TASK, "--record", str(record_path)]
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(Path.cwd()))


def _play(record_path: Path, moves: list[tuple[str, dict[str, Any]]]) -> list[str]:
    async def session() -> list[str]:
        answers = []
        async with Client(_serve(record_path)) as client:
            for name, arguments in moves:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, result
                answers.append(result.content[0].text)  # type: ignore[union-attr]
        return answers

    return asyncio.run(session())


def test_a_closing_message_ends_the_trial_as_agent_stop(tmp_path: Path, db_url: str) -> None:
    closing = ("respond_to_user", {"message": "Your order is cancelled. Goodbye.", "end_conversation": True})
    answers = _play(tmp_path / "record.json", [*_oracle_moves(db_url), closing])
    assert "Goodbye" in answers[-1] and "[You have ended the conversation.]" in answers[-1]
    record = TrialRecord.model_validate_json((tmp_path / "record.json").read_text())
    assert record.end_reason == "agent_stop" and record.reward == 1.0
    assert record.grade is not None and record.grade.state_ok and record.grade.failure_category is None


def test_a_client_that_disconnects_after_its_work_ends_the_trial_as_agent_stop(
    tmp_path: Path, db_url: str
) -> None:
    _play(tmp_path / "record.json", _oracle_moves(db_url))
    record = TrialRecord.model_validate_json((tmp_path / "record.json").read_text())
    assert record.end_reason == "agent_stop" and record.reward == 1.0


def test_end_conversation_must_be_a_boolean(tmp_path: Path) -> None:
    async def session() -> str:
        async with Client(_serve(tmp_path / "record.json")) as client:
            result = await client.call_tool("respond_to_user", {"message": "Bye", "end_conversation": "yes"})
            assert result.is_error
            return result.content[0].text  # type: ignore[union-attr]

    assert "'end_conversation' must be true or false" in asyncio.run(session())
