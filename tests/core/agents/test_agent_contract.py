"""What a team's agent may rely on and what it cannot break: its class is checked against the
role's protocol before any trial starts, and the tool schemas it is handed are its own copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._agents.registry import AgentSpecError, resolve
from castbench._agents.views import briefing_for
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench.domain import load_domain
from tests.core.fixtures_agents import SchemaVandalPolicy

FIXTURES = "tests.core.fixtures_agents"


@pytest.mark.parametrize(
    ("role", "name", "message"),
    [
        ("policy", "ProposeMisspelledPolicy", "does not implement the policy protocol: no method 'propose'"),
        ("user", "MutedUser", "does not implement the user protocol: no method 'reply'"),
        ("critic", "TeamPolicy", "does not implement the critic protocol: no method 'verify'"),
    ],
)
def test_a_class_missing_a_protocol_method_is_rejected_by_name(role: str, name: str, message: str) -> None:
    with pytest.raises(AgentSpecError) as caught:
        resolve(role, f"{FIXTURES}:{name}")  # type: ignore[arg-type]
    assert message in str(caught.value) and f"{FIXTURES}:{name}" in str(caught.value)


def test_a_class_missing_a_method_fails_before_any_trial(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'r.db'}"
    with pytest.raises(AgentSpecError, match="no method 'propose'"):
        evaluate(domains="retail", policy=f"{FIXTURES}:ProposeMisspelledPolicy", trials=1, db=db)
    assert ResultsStore(db).runs() == []


def test_tool_schemas_handed_to_an_agent_are_its_own_copies() -> None:
    retail = load_domain("retail")
    task = retail.tasks("test")[0]
    pristine = retail.toolkit.schemas
    first = briefing_for(retail, task, 1, 0, privileged=False)
    SchemaVandalPolicy(first)
    assert all(schema["function"]["description"] == "VANDALISED" for schema in first.tools)
    later = briefing_for(retail, task, 2, 1, privileged=False)
    critic = briefing_for(retail, task, 2, 1, privileged=True)
    assert list(later.tools) == list(critic.tools) == pristine
    assert load_domain("retail").toolkit.schemas == pristine
    assert all(tool.schema["function"]["description"] != "VANDALISED" for tool in retail.toolkit)
