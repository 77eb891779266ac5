"""Provenance on boards: re-run rows apart from submitted ones, `require_rerun`, and runs whose
agents ran without the sandbox refused unless the board opts in."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from castbench._records.provenance import AgentPlacement
from castbench._records.store.export import ExportedRun, read_export, write_export
from castbench._results.compare.comparability import comparability_number
from castbench._results.publish.board import BoardError, BoardSpec, load_board
from castbench.domain import resolve_domains
from castbench_boards.build import build_board
from tests.publish.exports import Exports

TEAM = "tests.core.fixtures_agents:TeamPolicy"
RETAIL = comparability_number(resolve_domains("retail")[0].version)
"""The installed retail domain's comparability number (the exports fixture runs it)."""
HEADER = (
    f'title = "Provenance board"\ndomains = {{ retail = {RETAIL} }}\ntrials = 2\n'
    'metrics = ["pass^1", "pass^2"]\n'
)
ORACLE = 'entries = [{ name = "oracle", run = "results/oracle.castbench.json.gz", policy = "oracle" }]\n'


def _board(root: Path, text: str, name: str = "provenance-board") -> BoardSpec:
    path = root / "leaderboards" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return load_board(path)


def _rows(out: Path) -> list[dict[str, object]]:
    return json.loads((out / "board.json").read_text())["rows"]  # type: ignore[no-any-return]


def test_rows_from_files_are_submitted_and_rows_this_build_ran_are_re_run(
    exports: Exports, tmp_path: Path
) -> None:
    spec = _board(exports.root, HEADER + "allow_privileged = true\n" + ORACLE)
    build_board(spec, exports.root, tmp_path / "taken")
    (taken,) = _rows(tmp_path / "taken")
    assert taken["origin"] == "submitted" and taken["source"] == "results/oracle.castbench.json.gz"
    assert taken["agents"] == {
        "policy": {"agent": "oracle", "where": "builtin", "detail": "", "privileged": True, "needs": None},
        "user": {"agent": "scripted", "where": "builtin", "detail": "", "privileged": False, "needs": None},
    }
    rerun = {"oracle": read_export(exports.oracle)}  # what `rerun_entries` hands the build
    build_board(spec, exports.root, tmp_path / "rerun", reruns=rerun)
    (row,) = _rows(tmp_path / "rerun")
    assert row["origin"] == "re-run"
    table = list(csv.DictReader(io.StringIO((tmp_path / "rerun" / "board.csv").read_text())))
    assert (table[0]["origin"], table[0]["policy ran"], table[0]["user ran"]) == (
        "re-run",
        "built-in †",
        "built-in",
    )
    assert table[0]["critic ran"] == ""
    markdown = (tmp_path / "rerun" / "board.md").read_text()
    own = "trials: castbench's own agents"  # what kept its trials independent
    assert "| provenance |" in markdown and f"| re-run; policy built-in †; user built-in; {own} |" in markdown
    assert "submitted rows were taken from an exported file" in markdown
    page = (tmp_path / "taken" / "index.html").read_text()
    # a short badge, the details on demand
    assert '<summary><span class="badge submitted">submitted</span></summary>' in page
    assert "<p>submitted; policy built-in †; user built-in; trials: castbench&#39;s own agents</p>" in page


def test_a_board_that_requires_re_run_rows_keeps_submitted_ones_off(exports: Exports, tmp_path: Path) -> None:
    declared = _board(exports.root, HEADER + "allow_privileged = true\nrequire_rerun = true\n" + ORACLE)
    with pytest.raises(BoardError, match=r"requires re-run rows, but this build took oracle from files"):
        build_board(declared, exports.root, tmp_path)
    # the file cannot claim its way on: an export whose meta says it ran here is still submitted
    claims = read_export(exports.oracle)
    claims = claims.model_copy(update={"meta": {**claims.meta, "origin": {"kind": "run", "file": None}}})
    write_export(claims, exports.root / "results" / "claims" / "oracle.castbench.json.gz")
    claimed = _board(
        exports.root,
        HEADER + "allow_privileged = true\nrequire_rerun = true\n"
        'entries = [{ name = "oracle", run = "results/claims/oracle.castbench.json.gz" }]\n',
    )
    with pytest.raises(BoardError, match="took oracle from files"):
        build_board(claimed, exports.root, tmp_path)
    build_board(declared, exports.root, tmp_path, reruns={"oracle": read_export(exports.oracle)})
    assert [row["origin"] for row in _rows(tmp_path)] == ["re-run"]
    discovered = _board(exports.root, HEADER + "allow_privileged = true\nrequire_rerun = true\n")
    with pytest.raises(BoardError, match="no eligible run") as error:
        build_board(discovered, exports.root, tmp_path)
    assert (
        "results/oracle.castbench.json.gz: submitted (taken from a file); the board requires re-run rows"
        in str(error.value)
    )


def _as_team_agent(exported: ExportedRun, placement: dict[str, AgentPlacement] | None) -> ExportedRun:
    """A stored export, as if a team's import-path policy had played it (so placed)."""
    config = exported.config.model_copy(
        update={"policy": TEAM, "privileged": [], "placement": placement or {}}
    )
    digest = config.config_hash()
    return exported.model_copy(update={"config": config, "config_hash": digest, "run_id": f"r-{digest[:12]}"})


def test_runs_whose_agents_ran_without_the_sandbox_are_refused_unless_the_board_allows_them(
    exports: Exports, tmp_path: Path
) -> None:
    noisy = read_export(exports.noisy)
    user = AgentPlacement(agent="scripted", where="builtin")
    recorded = _as_team_agent(
        noisy,
        {
            "policy": AgentPlacement(agent=TEAM, where="unsandboxed", detail="castbench has no sandbox"),
            "user": user,
        },
    )
    before = _as_team_agent(noisy, None)  # stored before placements were recorded: no sandbox then
    sandboxed = _as_team_agent(
        noisy,
        {"policy": AgentPlacement(agent=TEAM, where="sandboxed", detail="landlock ABI 7"), "user": user},
    )
    root = tmp_path / "project"
    for name, exported in {"recorded": recorded, "before": before, "sandboxed": sandboxed}.items():
        write_export(exported, root / "results" / "team" / f"{name}.castbench.json.gz")
    spec = _board(root, HEADER)
    build_board(spec, root, tmp_path / "out", verify=False)
    board = json.loads((tmp_path / "out" / "board.json").read_text())
    assert [row["source"] for row in board["rows"]] == ["results/team/sandboxed.castbench.json.gz"]
    assert board["rows"][0]["agents"]["policy"]["where"] == "sandboxed"
    assert board["allow_unsandboxed"] is False
    reasons = {item["source"].rsplit("/", 1)[-1]: item["reason"] for item in board["excluded"]}
    assert (
        "without the OS sandbox (policy tests.core.fixtures_agents:TeamPolicy: castbench has no sandbox)"
        in (reasons["recorded.castbench.json.gz"])
    )
    assert "recorded before castbench sandboxed agent workers" in reasons["before.castbench.json.gz"]
    assert "allow_unsandboxed = true to rank them" in reasons["before.castbench.json.gz"]
    opted_in = _board(root, HEADER + "allow_unsandboxed = true\n")
    build_board(opted_in, root, tmp_path / "opted", verify=False)
    rows = _rows(tmp_path / "opted")
    assert len(rows) == 3
    assert "unsandboxed" in (tmp_path / "opted" / "board.md").read_text()


def test_a_relabelled_placement_is_refused(exports: Exports, tmp_path: Path) -> None:
    """An oracle export relabelled as a team's agent, its placement left as the built-in's."""
    oracle = read_export(exports.oracle)
    config = oracle.config.model_copy(update={"policy": TEAM, "privileged": []})
    relabelled = oracle.model_copy(update={"config": config, "config_hash": config.config_hash()})
    root = tmp_path / "project"
    write_export(relabelled, root / "results" / "relabelled.castbench.json.gz")
    spec = _board(root, HEADER + "allow_unsandboxed = true\n")
    with pytest.raises(BoardError, match="no eligible run") as error:
        build_board(spec, root, tmp_path / "out", verify=False)
    assert "provenance contradicts the run's config: the policy's placement names 'oracle'" in str(
        error.value
    )
