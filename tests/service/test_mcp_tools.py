"""Domain tools over MCP: each trial's calls run in its own sandbox, recorded and verified as
in-process calls are, and concurrent trials never see each other's state."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="MCP: pip install -e '.[service]'")
pytestmark = pytest.mark.extra("service")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from castbench._base.conversation import ToolCallAction  # noqa: E402
from castbench._grading.state_diff import state_diff  # noqa: E402
from castbench._records.trial import TrialRecord  # noqa: E402
from castbench._trial.episode import Episode, Verification  # noqa: E402
from castbench.domain import Domain  # noqa: E402
from castbench_bridges.mcp_host import McpHost  # noqa: E402
from castbench_bridges.mcp_trial import McpTrial  # noqa: E402

SESSIONS = 32


async def _replay_gold(url: str, calls: list[tuple[str, dict[str, object]]]) -> list[str]:
    async with Client(url) as client:
        results = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert not result.is_error, result
            results.append(result.content[0].text)  # type: ignore[union-attr]
        return results


def test_concurrent_sessions_each_change_only_their_own_sandbox(
    retail: Domain, open_episode: Callable[..., Episode]
) -> None:
    """32 trials served at once, each replaying its own task's gold calls over MCP concurrently:
    every sandbox ends in its own task's expected state, which differs from the others'."""
    tasks = [
        task for task in retail.tasks("test") if any(retail.toolkit.is_write(a.name) for a in task.actions)
    ]
    tasks = tasks[:SESSIONS]
    assert len(tasks) == SESSIONS
    episodes = [open_episode(task.id) for task in tasks]
    with McpHost() as host:
        urls = [host.add(McpTrial(episode)) for episode in episodes]
        gold = [[(a.name, dict(a.arguments)) for a in task.actions] for task in tasks]

        async def everyone() -> list[list[str]]:
            return await asyncio.gather(
                *(_replay_gold(url, calls) for url, calls in zip(urls, gold, strict=True))
            )

        asyncio.run(everyone())
    for task, episode in zip(tasks, episodes, strict=True):
        assert state_diff(episode.db, episode.expected) == [], task.id
        executed = [(s.action.name, s.action.arguments) for s in episode.steps]  # type: ignore[union-attr]
        assert executed == [(a.name, a.arguments) for a in task.actions]
    assert all(state_diff(episodes[0].db, other.db) for other in episodes[1:])


def test_an_unknown_trial_url_reaches_nothing(open_episode: Callable[..., Episode]) -> None:
    episode = open_episode("retail-test-0002")
    with McpHost() as host:
        url = host.add(McpTrial(episode))
        host.remove(url)

        async def call() -> None:
            async with Client(url) as client:
                await client.call_tool("get_order_details", {"order_id": "#W1"})

        with pytest.raises(Exception):  # noqa: B017  the protocol error of an unknown trial
            asyncio.run(call())
    assert episode.steps == []


def test_a_rejection_comes_back_as_the_tool_result_and_nothing_runs(
    retail: Domain, open_episode: Callable[..., Episode]
) -> None:
    """The critic verifies before the server executes: its critique is the result, the state is
    untouched, and the agent's next call is the revision (run when the rounds are spent)."""
    task = retail.task("retail-test-0002")
    write = next(a for a in task.actions if retail.toolkit.is_write(a.name))
    episode = open_episode(
        task.id, "tests.critic.recording:RejectAllCritic", verification=Verification(rounds=2)
    )
    before = episode.db.fork()
    with McpHost() as host:
        url = host.add(McpTrial(episode))

        async def twice() -> list[object]:
            async with Client(url) as client:
                return [await client.call_tool(write.name, dict(write.arguments)) for _ in range(2)]

        first, second = asyncio.run(twice())
    assert first.is_error and "rejected by the test critic" in first.content[0].text  # type: ignore[attr-defined]
    assert first.content[0].text.startswith("Not executed")  # type: ignore[attr-defined]
    assert state_diff(episode.db, before) != []  # the second call (rounds spent) executed
    (step,) = episode.steps
    assert [p.round for p in step.proposals] == [0, 1]
    assert all(p.verdict is not None and p.verdict.flags for p in step.proposals)
    assert step.action == ToolCallAction(name=write.name, arguments=dict(write.arguments))
    assert not second.is_error  # type: ignore[attr-defined]


def _serve(record_path: Path, *options: str) -> list[str]:
    """`castbench mcp serve` of one retail trial, as a Python command line's arguments."""
    return [
        "-c",
        "from castbench._cli.app import main; main()",
        "mcp",
        "serve",
        "--domain",
        "retail",
        "--task",
        "retail-test-0002",
        "--record",
        str(record_path),
        *options,
    ]


def test_cli_serves_one_trial_over_stdio_and_writes_its_record(tmp_path: Path) -> None:
    """`castbench mcp serve`: the customer's message in the instructions, the domain tools and
    `respond_to_user`; when the customer leaves, the graded record is written."""
    record_path = tmp_path / "record.json"
    params = StdioServerParameters(command=sys.executable, args=_serve(record_path), cwd=str(Path.cwd()))

    async def session() -> tuple[str | None, list[str], str]:
        async with Client(params) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            answer = await client.call_tool("respond_to_user", {"message": "Sorry, I cannot help with that."})
            return client.instructions, names, answer.content[0].text  # type: ignore[union-attr]

    instructions, names, answer = asyncio.run(session())
    assert instructions is not None and "cancel an order" in instructions
    assert "cancel_pending_order" in names and "respond_to_user" in names
    assert answer
    record = TrialRecord.model_validate_json(record_path.read_text())
    assert record.task_id == "retail-test-0002" and record.steps[0].action is not None
    assert record.reward == 0.0


def test_cli_serves_one_trial_over_http_with_its_instructions(tmp_path: Path) -> None:
    """`--transport http`: the instructions (the policy and the customer's first message) reach
    the client as over stdio; the server ends, writing the record, when the customer leaves."""
    record_path = tmp_path / "record.json"
    process = subprocess.Popen(
        [sys.executable, *_serve(record_path, "--transport", "http")], stdout=subprocess.PIPE, text=True
    )

    async def session(url: str) -> tuple[str | None, list[str]]:
        answers: list[str] = []
        async with Client(url) as client:
            while not answers or "[The customer has ended the conversation.]" not in answers[-1]:
                assert len(answers) < 10, answers
                answer = await client.call_tool(
                    "respond_to_user", {"message": "Sorry, I cannot help. Goodbye."}
                )
                answers.append(answer.content[0].text)  # type: ignore[union-attr]
            return client.instructions, answers

    try:
        assert process.stdout is not None
        instructions, answers = asyncio.run(session(process.stdout.readline().strip()))
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert instructions is not None and "cancel an order" in instructions
    record = TrialRecord.model_validate_json(record_path.read_text())
    assert record.end_reason == "user_stop" and len(record.steps) == len(answers)
