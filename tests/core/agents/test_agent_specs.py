"""`--policy/--critic/--user` strings: built-ins with typed parameters, a team's own class by
import path, model strings; every mistake is an `AgentSpecError` that says what is wrong."""

from __future__ import annotations

import pytest

from castbench._agents.registry import AgentSpecError, builtin_agents, resolve
from castbench._agents.scripted.noisy import NoisyPolicy
from castbench._agents.scripted.oracle import OraclePolicy
from castbench._records.store import ResultsStore
from castbench._run.api import build_config, evaluate
from tests.core.fixtures_agents import SlowNoisyPolicy, TeamPolicy


def test_builtins_resolve_with_typed_parameters() -> None:
    oracle = resolve("policy", "oracle")
    assert oracle.factory is OraclePolicy and oracle.privileged and oracle.params == {}
    noisy = resolve("policy", "scripted:noisy?p=0.15&recover=0.5")
    assert noisy.factory is NoisyPolicy and noisy.params == {"p": 0.15, "recover": 0.5}
    assert noisy.spec == "scripted:noisy?p=0.15&recover=0.5" and noisy.kind == "builtin"
    assert resolve("critic", "none").factory is None
    assert resolve("user", "scripted?patience=2").params == {"patience": 2}
    assert {agent.name for agent in builtin_agents("policy")} >= {"oracle", "scripted:noisy"}


@pytest.mark.parametrize(
    ("role", "spec", "message"),
    [
        (
            "policy",
            "telepathy",
            "unknown policy 'telepathy': not a built-in (oracle, scripted:lookup-refuse, "
            "scripted:lookup-spray, scripted:noisy",
        ),
        ("user", "robot", "unknown user 'robot'"),
        (
            "policy",
            "scripted:noisy?temperature=0.2",
            "unknown parameter ['temperature'] (parameters: p, recover, insist, clarify, draws)",
        ),
        ("policy", "scripted:noisy?p=1.5", "'p': Input should be less than or equal to 1"),
        ("policy", "scripted:noisy?p=-0.1", "'p': Input should be greater than or equal to 0"),
        ("policy", "scripted:noisy?p=lots", "'p': Input should be a valid number"),
        ("user", "scripted?patience=0", "'patience': Input should be greater than or equal to 1"),
        ("policy", "oracle?p=0.1", "policy 'oracle' takes no parameters (got p)"),
        ("policy", "scripted:noisy?p", "cannot parse parameters 'p'"),
        ("policy", "no_such_module_xyz:Policy", "cannot import 'no_such_module_xyz'"),
        ("policy", "tests.core.fixtures_agents:NoSuchPolicy", "has no attribute 'NoSuchPolicy'"),
    ],
)
def test_spec_errors_say_what_is_wrong(role: str, spec: str, message: str) -> None:
    with pytest.raises(AgentSpecError) as caught:
        resolve(role, spec)  # type: ignore[arg-type]
    assert message in str(caught.value)


def test_model_strings_need_a_model_factory() -> None:
    with pytest.raises(AgentSpecError, match="no model backend is available for the policy role"):
        resolve("policy", "openai/gpt-4o-mini")
    spec = resolve("policy", "openai/gpt-4o-mini?temperature=0.2", model_factory=lambda b, **p: None)
    assert spec.kind == "model" and spec.params == {"model": "openai/gpt-4o-mini", "temperature": 0.2}


def test_a_team_policy_by_import_path() -> None:
    spec = resolve("policy", "tests.core.fixtures_agents:TeamPolicy?closing=Bye%20then")
    assert spec.kind == "import" and spec.transport == "worker" and not spec.privileged
    assert spec.factory is None  # imported in its worker process, not here
    assert spec.params == {"closing": "Bye then"}
    local = resolve("policy", "tests.core.fixtures_agents:TeamPolicy", in_process=True)
    assert local.factory is TeamPolicy and local.transport == "in-process"
    slow = resolve("policy", "tests.core.fixtures_agents:SlowNoisyPolicy?delay=0&p=0.5")
    # inherits the noisy policy's privilege, so it runs where privileged agents run
    assert slow.factory is SlowNoisyPolicy and slow.privileged and slow.transport == "in-process"
    assert slow.params == {"delay": 0, "p": 0.5}


def test_a_bad_spec_fails_before_anything_is_stored(db_url: str) -> None:
    db = db_url
    with pytest.raises(AgentSpecError):
        evaluate(domains="retail", policy="scripted:noisy?p=2", trials=1, db=db)
    with pytest.raises(AgentSpecError):
        build_config(domains="retail", policy="oracle", critic="nonsense")
    assert ResultsStore(db).runs() == []


def test_a_team_policy_runs_and_is_not_marked_privileged(db_url: str) -> None:
    db = db_url
    result = evaluate(
        domains="retail",
        policy="tests.core.fixtures_agents:TeamPolicy",
        trials=2,
        db=db,
        tasks=["retail-test-0001", "retail-test-0002"],
    )
    assert result.summary.config.privileged == []
    assert result.summary.config.policy == "tests.core.fixtures_agents:TeamPolicy"
    records = ResultsStore(db).trials(result.outcome.run_id)
    assert len(records) == 4 and all(r.status == "scored" and r.end_reason == "user_stop" for r in records)
