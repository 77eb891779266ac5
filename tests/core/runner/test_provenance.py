"""Provenance: where each role's agent ran, recorded with the run; where the run came from."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from castbench._agents.models.resolve import model_factory
from castbench._agents.registry import AgentSpec
from castbench._agents.sandbox import SandboxNeeds
from castbench._records.config import RunConfig
from castbench._records.provenance import (
    AgentPlacement,
    SandboxState,
    derived_placement,
    placement_of,
    placement_problems,
    provenance,
    sandbox_state,
)
from castbench._records.store.export import read_export
from castbench._run.api import build_config, evaluate
from tests.support import sqlite_url

REPO = Path(__file__).resolve().parents[3]
TASK = ["retail-test-0001"]
TEAM = "tests.core.fixtures_agents:TeamPolicy"
LANDLOCK = SandboxState(available=True, mechanism="landlock ABI 7")
NONE = SandboxState(available=False, reason="the kernel offers no Landlock")
NO_LANDLOCK = SimpleNamespace(
    available=False, mechanism="", reason="no sandbox on plan9 (castbench uses Landlock)"
)
"""What `castbench._agents.sandbox.support()` answers where workers cannot be sandboxed."""
WITH_LANDLOCK = SimpleNamespace(available=True, mechanism="landlock ABI 7", reason="")


def _import_spec(transport: str = "worker", privileged: bool = False) -> AgentSpec:
    return AgentSpec("policy", TEAM, TEAM, None, {}, privileged, "import", transport)  # type: ignore[arg-type]


@pytest.mark.extra("service")  # an agent service is resolved only with its extra
def test_each_kind_of_agent_has_its_placement() -> None:
    config, _ = build_config(domains="retail", policy="oracle", critic="rules", tasks=TASK)
    assert config.placement == {
        "policy": AgentPlacement(agent="oracle", where="builtin", privileged=True),
        "critic": AgentPlacement(agent="rules", where="builtin"),
        "user": AgentPlacement(agent="scripted", where="builtin"),
    }
    assert "critic" not in build_config(domains="retail", policy="oracle", tasks=TASK)[0].placement
    sandboxed = placement_of(_import_spec(), LANDLOCK)
    assert (sandboxed.where, sandboxed.detail, sandboxed.needs) == ("sandboxed", "landlock ABI 7", None)
    needs = SandboxNeeds(env=("OPENAI_API_KEY",), connect=(8000,))
    declared = placement_of(replace(_import_spec(), sandbox_needs=needs), LANDLOCK)
    assert declared.needs == needs
    assert declared.describe().endswith(
        "sandboxed in a worker process (landlock ABI 7; declared env OPENAI_API_KEY, port 8000)"
    )
    unsandboxed = placement_of(_import_spec(), NONE)
    assert (unsandboxed.where, unsandboxed.detail) == ("unsandboxed", "the kernel offers no Landlock")
    assert placement_of(_import_spec("in-process"), LANDLOCK).where == "in-process"
    privileged = placement_of(_import_spec("in-process", privileged=True), LANDLOCK)
    assert (privileged.where, privileged.privileged) == ("privileged", True)
    from castbench._agents.registry import resolve

    model = placement_of(resolve("policy", "openai/gpt-4o-mini", model_factory("policy")), NONE)
    assert (model.where, model.describe()) == ("model", "model openai/gpt-4o-mini called by castbench")
    service = placement_of(resolve("policy", "http://127.0.0.1:9/agent"), NONE)
    assert (service.where, service.describe()) == ("service", "agent service at http://127.0.0.1:9/agent")


def test_an_import_path_worker_is_recorded_as_the_sandbox_finds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `castbench._agents.sandbox.support()` answers (what the workers act on) is recorded."""
    monkeypatch.setattr("castbench._agents.sandbox.support", lambda: NO_LANDLOCK)
    assert sandbox_state() == SandboxState(available=False, reason=NO_LANDLOCK.reason)
    config, _ = build_config(domains="retail", policy=TEAM, tasks=TASK)
    placement = config.placement["policy"]
    assert (placement.where, placement.agent, placement.detail) == ("unsandboxed", TEAM, NO_LANDLOCK.reason)
    assert config.placement["user"].where == "builtin"  # castbench's own code: not an unsandboxed agent
    in_process, _ = build_config(domains="retail", policy=TEAM, tasks=TASK, in_process=True)
    assert in_process.placement["policy"].where == "in-process" and in_process.in_process == ["policy"]
    monkeypatch.setattr("castbench._agents.sandbox.support", lambda: WITH_LANDLOCK)
    assert sandbox_state() == LANDLOCK


def test_a_resume_with_the_sandbox_changed_is_a_new_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    monkeypatch.setattr("castbench._agents.sandbox.support", lambda: NO_LANDLOCK)
    first = evaluate(db=db, domains="retail", policy=TEAM, tasks=TASK, trials=1)
    again = evaluate(db=db, domains="retail", policy=TEAM, tasks=TASK, trials=1)
    assert again.outcome.run_id == first.outcome.run_id and again.outcome.resumed
    monkeypatch.setattr("castbench._agents.sandbox.support", lambda: WITH_LANDLOCK)
    changed = evaluate(db=db, domains="retail", policy=TEAM, tasks=TASK, trials=1)
    assert changed.outcome.run_id != first.outcome.run_id and not changed.outcome.resumed
    assert changed.outcome.superseded == first.outcome.run_id
    assert any("the policy's placement (unsandboxed -> sandboxed" in item for item in changed.outcome.changes)


def test_runs_stored_before_keep_their_hash_and_get_a_derived_placement() -> None:
    """Committed exports were stored before placements were recorded: same hash, and their
    placements follow from their specs (built-ins here)."""
    exports = sorted((REPO / "results").rglob("*.castbench.json.gz"))
    assert exports
    for path in exports[:3]:
        exported = read_export(path)
        if exported.config.placement:
            continue
        assert exported.config.config_hash() == exported.config_hash
        found = provenance(exported.config, exported.meta)
        assert not found.recorded and found.origin.kind == "unrecorded"
        assert found.agents["policy"].where == "builtin"
    old = RunConfig(domains={"retail": "2-0"}, policy=TEAM, user="scripted", in_process=[])
    assert derived_placement(old)["policy"].where == "unsandboxed"
    assert "before castbench sandboxed" in derived_placement(old)["policy"].detail
    debugging = old.model_copy(update={"in_process": ["policy"]})
    assert derived_placement(debugging)["policy"].where == "in-process"


def test_a_placement_that_contradicts_its_specs_is_named() -> None:
    config, _ = build_config(domains="retail", policy="oracle", tasks=TASK)
    assert placement_problems(config) == []
    relabelled = config.model_copy(update={"policy": "my_agent:Agent", "privileged": []})
    problems = placement_problems(relabelled)
    assert any("names 'oracle', its spec 'my_agent:Agent'" in p for p in problems)
    assert any("is recorded as builtin, which its spec cannot be" in p for p in problems)
    assert any("marked privileged, but the run's `privileged` does not list it" in p for p in problems)
    hidden = config.model_copy(
        update={"placement": {**config.placement, "policy": AgentPlacement(agent="oracle", where="builtin")}}
    )
    assert any(
        "marked not privileged, but the run's `privileged` lists it" in p for p in placement_problems(hidden)
    )
    assert config.config_hash() != hidden.config_hash()  # the placement is part of the run's identity
