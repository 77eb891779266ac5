"""Provenance as users see it: the eval console, `--output` JSON, `runs list --json`, `runs show`,
and `castbench import`, which always records a run as submitted."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from castbench._records.store.export import read_export, write_export
from tests.support import invoke, sqlite_url

TASK = "retail-test-0001"
PRIVILEGED = "tests.core.runner.provenance_agents:DeclaredPrivilegedPolicy"
TEAM = "tests.core.fixtures_agents:TeamPolicy"
UPPER_BOUND = "policy privileged: reads the ground truth — an upper bound, not an entry"


def _eval(tmp_path: Path, *args: str) -> tuple[str, dict[str, Any]]:
    out = tmp_path / "summary.json"
    db = sqlite_url(tmp_path / "runs.db")
    options = ["--domain", "retail", "--tasks", TASK, "--trials", "1", "--db", db, "--output", str(out)]
    result = invoke("eval", *options, *args)
    assert result.exit_code == 0, result.output
    return result.output, json.loads(out.read_text())


def _lines(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines()]


def test_a_built_in_run_says_where_its_agents_ran_and_marks_privilege(tmp_path: Path) -> None:
    output, summary = _eval(tmp_path, "--policy", "oracle", "--critic", "rules")
    lines = _lines(output)
    provenance = next(line for line in lines if line.startswith("provenance:"))
    assert provenance.startswith("provenance: run here (castbench eval); policy: castbench built-in 'oracle'")
    assert (
        "critic: castbench built-in 'rules'" in provenance
        and "user: castbench built-in 'scripted'" in provenance
    )
    assert lines.index(provenance) == 1  # right under the header
    assert UPPER_BOUND in lines
    assert not any("no sandbox" in line for line in lines)  # built-ins are castbench's own code
    recorded = summary["provenance"]
    assert recorded["origin"] == {"kind": "run", "file": None}
    assert recorded["agents"]["policy"] == {
        "agent": "oracle", "where": "builtin", "detail": "", "privileged": True, "needs": None,
    }  # fmt: skip
    assert (
        recorded["agents"]["critic"]["where"] == "builtin" and not recorded["agents"]["critic"]["privileged"]
    )


def test_a_privileged_import_path_policy_is_marked_on_the_console(tmp_path: Path) -> None:
    output, summary = _eval(tmp_path, "--policy", PRIVILEGED)
    assert UPPER_BOUND in _lines(output)
    assert "inside castbench's process (declared privileged)" in output
    assert summary["provenance"]["agents"]["policy"]["where"] == "privileged"
    assert summary["config"]["privileged"] == ["policy"]


def test_an_unsandboxed_worker_is_said_once_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where workers cannot be sandboxed (what `castbench._agents.sandbox.support()` answers on
    another OS, or under CASTBENCH_SANDBOX=off), `eval` says so in one line."""
    reason = "no sandbox on plan9 (castbench uses Landlock)"
    monkeypatch.setattr(
        "castbench._agents.sandbox.support",
        lambda: SimpleNamespace(available=False, mechanism="", reason=reason),
    )
    output, summary = _eval(tmp_path, "--policy", TEAM)
    warnings = [line for line in _lines(output) if line.startswith("no sandbox:")]
    assert warnings == [
        f"no sandbox: {reason}; the run is recorded as unsandboxed (policy), which boards refuse "
        "unless they set allow_unsandboxed"
    ]
    assert f"policy: import-path agent '{TEAM}', in an unsandboxed worker process" in output
    assert summary["provenance"]["agents"]["policy"]["where"] == "unsandboxed"
    assert not any(UPPER_BOUND in line for line in _lines(output))


def test_in_process_agents_are_marked(tmp_path: Path) -> None:
    output, summary = _eval(tmp_path, "--policy", TEAM, "--in-process")
    assert "policy in castbench's process (--in-process): it could read the ground truth" in output
    assert summary["provenance"]["agents"]["policy"]["where"] == "in-process"


def test_runs_list_and_show_carry_the_provenance(tmp_path: Path) -> None:
    _eval(tmp_path, "--policy", "oracle")
    db = sqlite_url(tmp_path / "runs.db")
    listed = json.loads(invoke("runs", "list", "--db", db, "--json").output)
    assert len(listed) == 1
    assert listed[0]["provenance"]["origin"]["kind"] == "run"
    assert listed[0]["provenance"]["agents"]["policy"]["where"] == "builtin"
    table = invoke("runs", "list", "--db", db, width=400).output
    assert "here · policy built-in † · user built-in" in table
    shown = invoke("runs", "show", listed[0]["id"], "--db", db).output
    assert "provenance: run here (castbench eval); policy: castbench built-in 'oracle'" in shown
    assert UPPER_BOUND in shown


def test_an_import_is_submitted_whatever_the_file_claims(tmp_path: Path) -> None:
    _eval(tmp_path, "--policy", "oracle")
    db = sqlite_url(tmp_path / "runs.db")
    run_id = json.loads(invoke("runs", "list", "--db", db, "--json").output)[0]["id"]
    exported_file = tmp_path / "mine.castbench.json.gz"
    assert invoke("export", run_id, "--db", db, "--out", str(exported_file)).exit_code == 0
    exported = read_export(exported_file)
    assert exported.meta["origin"] == {"kind": "run", "file": None}  # the file says: run here
    assert exported.config.placement["policy"].where == "builtin"  # placements travel in the config
    claims = exported.model_copy(update={"meta": {**exported.meta, "origin": {"kind": "run", "file": None}}})
    forged = tmp_path / "claims-run-here.castbench.json.gz"
    write_export(claims, forged)
    raw = json.loads(gzip.decompress(forged.read_bytes()))
    assert raw["meta"]["origin"]["kind"] == "run"
    other = sqlite_url(tmp_path / "other.db")
    imported = invoke("import", str(forged), "--db", other)
    assert imported.exit_code == 0, imported.output
    assert "recorded as submitted from claims-run-here.castbench.json.gz" in " ".join(imported.output.split())
    listed = json.loads(invoke("runs", "list", "--db", other, "--json").output)
    assert listed[0]["provenance"]["origin"] == {
        "kind": "submitted",
        "file": "claims-run-here.castbench.json.gz",
    }
    shown = invoke("runs", "show", run_id, "--db", other).output
    assert "provenance: submitted: imported from claims-run-here.castbench.json.gz" in shown
    assert "submitted" in invoke("runs", "list", "--db", other, width=400).output
    # importing it back where it ran adds nothing and changes nothing
    again = invoke("import", str(forged), "--db", db)
    assert again.exit_code == 0 and "recorded as submitted" not in again.output
    assert (
        json.loads(invoke("runs", "list", "--db", db, "--json").output)[0]["provenance"]["origin"]["kind"]
        == "run"
    )
