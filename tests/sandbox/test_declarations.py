"""What an agent declares it needs is on the record: a warning line on the console, every
declaration on the board's row (summarised: a cell stays small), boards refuse what their
allow-lists do not name, and a declaration that opens a resource whole makes the row
unsandboxed for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._agents.sandbox import SandboxNeeds, declared_needs
from castbench._records.provenance import AgentPlacement, Provenance, RunOrigin
from castbench._results.publish.board import load_board
from castbench._results.report.provenance import provenance_lines
from castbench_boards.rows import _declaration_problems

TEAM = "team.agent:Policy"


def _placed(needs: SandboxNeeds) -> AgentPlacement:
    return AgentPlacement(
        agent=TEAM, where="sandboxed", detail="landlock ABI 7 + seccomp: TCP only", needs=needs
    )


def _board(tmp_path: Path, extra: str = "") -> object:
    path = tmp_path / "leaderboards" / "b.toml"
    path.parent.mkdir(parents=True)
    path.write_text('title = "b"\ndomains = { retail = 1 }\ntrials = 1\nmetrics = ["pass^1"]\n' + extra)
    return load_board(path)


def test_boards_refuse_declarations_outside_their_allow_lists(tmp_path: Path) -> None:
    needs = SandboxNeeds(read=("/models/qwen",), connect=(8000,), env=("OPENAI_API_KEY",))
    strict = _board(tmp_path / "strict")
    (problem,) = _declaration_problems(strict, {"policy": _placed(needs)})  # type: ignore[arg-type]
    assert "env OPENAI_API_KEY" in problem and "port 8000" in problem and "read /models/qwen" in problem
    allowing = _board(
        tmp_path / "allowing",
        'allowed_reads = ["/models"]\nallowed_ports = [8000]\nallowed_env = ["OPENAI_API_KEY"]\n',
    )
    assert _declaration_problems(allowing, {"policy": _placed(needs)}) == []  # type: ignore[arg-type]
    sibling = SandboxNeeds(read=("/models-other",))
    assert _declaration_problems(allowing, {"policy": _placed(sibling)})  # type: ignore[arg-type]


def test_a_declaration_that_opens_a_resource_whole_is_unsandboxed_whatever_the_lists_say(
    tmp_path: Path,
) -> None:
    board = _board(tmp_path, 'allowed_reads = ["/"]\nallowed_ports = [53]\n')
    problems = _declaration_problems(board, {"policy": _placed(SandboxNeeds(read=("/",), udp=(53,)))})  # type: ignore[arg-type]
    assert problems == [
        "the policy's declarations leave it unsandboxed for filesystem, udp; the board allows none "
        "(allow_unsandboxed = true to rank it)"
    ]
    opted_in = _board(
        tmp_path / "opted", 'allowed_reads = ["/"]\nallowed_ports = [53]\nallow_unsandboxed = true\n'
    )
    assert _declaration_problems(opted_in, {"policy": _placed(SandboxNeeds(read=("/",), udp=(53,)))}) == []  # type: ignore[arg-type]


def test_declarations_are_a_warning_line_on_the_console() -> None:
    needs = SandboxNeeds(read=("/",), connect=(8000,), env=("OPENAI_API_KEY",))
    provenance = Provenance(origin=RunOrigin(kind="run"), agents={"policy": _placed(needs)})
    lines = provenance_lines(provenance)
    (warning,) = [line for line in lines if "declared needs" in line]
    assert "env OPENAI_API_KEY, port 8000, read /" in warning
    assert "recorded as unsandboxed for filesystem" in warning


def test_a_provenance_cell_stays_small_whatever_was_declared() -> None:
    needs = SandboxNeeds(read=tuple(f"/data/{index:05}" for index in range(20_000)), connect=(1, 2, 3, 8000))
    cell = _placed(needs).short()
    assert len(cell) < 250, len(cell)
    assert "19997 more read entries (20000 in all)" in cell and "port 1-3, port 8000" in cell


def test_an_undeclared_udp_leaves_the_needs_as_they_were_recorded_before() -> None:
    class Agent:
        sandbox_env = ("KEY",)

    class Chatty(Agent):
        sandbox_udp = (53,)

    assert "udp" not in declared_needs(Agent, "a:Agent").model_dump(exclude_unset=True)
    assert declared_needs(Chatty, "a:Chatty").udp == (53,)
    with pytest.raises(ValueError, match="sandbox_udp must be a tuple"):

        class Bad(Agent):
            sandbox_udp = "53"

        declared_needs(Bad, "a:Bad")


def test_a_node_that_cannot_sandbox_refuses_an_agent_the_run_records_as_sandboxed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a Ray worker checks before it runs a batch: the node's own sandbox, not the driver's."""
    from castbench._base.errors import FatalInfrastructureError
    from castbench._records.provenance import require_recorded_sandbox, sandbox_state
    from castbench._records.store.export import read_export
    from castbench.agents import sandbox

    export = next((Path(__file__).resolve().parents[2] / "results").rglob("*.castbench.json.gz"))
    here = sandbox_state()
    placed = AgentPlacement(agent=TEAM, where="sandboxed", detail=here.mechanism or "landlock ABI 7")
    config = read_export(export).config.model_copy(update={"policy": TEAM, "placement": {"policy": placed}})
    if here.available:
        require_recorded_sandbox(config)  # this node offers what the run recorded
    monkeypatch.setenv(sandbox.SWITCH, "off")
    sandbox.support.cache_clear()
    try:
        with pytest.raises(FatalInfrastructureError, match="cannot sandbox the policy .* refuses to run it"):
            require_recorded_sandbox(config)
    finally:
        monkeypatch.delenv(sandbox.SWITCH)
        sandbox.support.cache_clear()
    other = config.model_copy(
        update={"placement": {"policy": placed.model_copy(update={"detail": "landlock ABI 4"})}}
    )
    if here.available:
        with pytest.raises(FatalInfrastructureError, match="every node must offer the same"):
            require_recorded_sandbox(other)
