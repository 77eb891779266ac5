"""No privileged data reaches a non-privileged policy or critic.

A recording policy and a recording critic (loaded by import path, as a team's own would be) keep
every view they receive over tasks of every retail family. Nothing in those views may carry the
task: not the `Task` object, not the user's instructions or goal, not a fact the user has not said
yet, not a ground-truth argument or an expected-state value before a legitimate channel (what the
user said, what a tool returned) showed it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from castbench.agents.conversation import AgentTurn, ReplyAction, ToolResultTurn, UserTurn
from castbench.agents.views import Briefing, PolicyView, PrivilegedBriefing
from castbench.api import evaluate
from castbench.domain import Domain, Fact, GradingSpec, Task, ToolCall, UserScenario, load_domain
from castbench.runner.seeds import trial_seed
from tests.core.fixtures_agents import RecordingCritic, RecordingPolicy

PRIVATE_TYPES = (Task, UserScenario, Fact, GradingSpec, ToolCall, PrivilegedBriefing)
BRIEFING_FIELDS = {"domain", "policy", "tools", "write_tools", "seed", "trial_index", "verbatim_policy"}


def _plain(value: Any) -> Any:
    """JSON-ready form of a view, every field of every nested object included."""
    if isinstance(value, BaseModel):
        return {name: _plain(getattr(value, name)) for name in type(value).model_fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(item) for item in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    return value


def _objects(value: Any) -> list[Any]:
    """Every object reachable through fields and containers."""
    found = [value]
    if isinstance(value, BaseModel):
        children = [getattr(value, name) for name in type(value).model_fields]
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        children = [getattr(value, field.name) for field in dataclasses.fields(value)]
    elif isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, list | tuple | set | frozenset):
        children = list(value)
    else:
        children = []
    for child in children:
        found.extend(_objects(child))
    return found


def _strings(value: Any) -> list[str]:
    """Distinctive values (ids, names, amounts) inside a row or an argument."""
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, bool) or value is None:
        return []
    text = str(value)
    return [text] if len(text) >= 4 else []


def _changed_values(domain: Domain, task: Task) -> list[str]:
    """Values the expected state holds that the pristine state does not."""
    expected = domain.replay(task)
    values: list[str] = []
    for table, keys in expected.touched().items():
        if table.startswith("_"):
            continue
        for key in keys:
            after, before = expected.row(table, key) or {}, domain.pristine.get(table, {}).get(key, {})
            for field, value in after.items():
                if before.get(field) != value:
                    values.extend(_strings(value))
    return values


def _pick_tasks(domain: Domain) -> list[Task]:
    """Two tasks of every family."""
    chosen: dict[str, list[Task]] = {}
    for task in domain.tasks("test"):
        if len(chosen.setdefault(task.family, [])) < 2:
            chosen[task.family].append(task)
    return [task for tasks in chosen.values() for task in tasks]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Domain, list[Task], list[Any], list[Any]]:
    retail = load_domain("retail")
    tasks = _pick_tasks(retail)
    RecordingPolicy.instances.clear()
    RecordingCritic.instances.clear()
    db = f"sqlite:///{tmp_path_factory.mktemp('privilege') / 'r.db'}"
    result = evaluate(
        domains="retail",
        policy="tests.core.fixtures_agents:RecordingPolicy",
        critic="tests.core.fixtures_agents:RecordingCritic",
        trials=2,
        tasks=[task.id for task in tasks],
        db=db,
        in_process=True,  # the recorders keep what they saw where this test can read it
    )
    assert result.summary.config["privileged"] == []
    return retail, tasks, list(RecordingPolicy.instances), list(RecordingCritic.instances)


_TEXT: dict[int, str] = {}


def _text(view: Any) -> str:
    """The whole view as lower-case JSON (cached: views are immutable)."""
    if id(view) not in _TEXT:
        _TEXT[id(view)] = json.dumps(_plain(view)).lower()
    return _TEXT[id(view)]


def _task_of(instance: Any, tasks: list[Task]) -> Task:
    seed = instance.briefing.seed
    index = instance.briefing.trial_index
    (task,) = [t for t in tasks if trial_seed(0, "retail", t.id, index) == seed]
    return task


def test_every_trial_was_recorded(recorded: tuple) -> None:
    _, tasks, policies, critics = recorded
    assert len(policies) == len(critics) == 2 * len(tasks) >= 30
    assert {_task_of(p, tasks).id for p in policies} == {t.id for t in tasks}
    assert all(p.views for p in policies) and any(c.views for c in critics)
    # the recording policy reached tools, so tool results are part of what is checked
    assert any(isinstance(e, ToolResultTurn) for p in policies for e in p.views[-1].conversation)


def test_briefings_are_plain_and_carry_nothing_of_the_task(recorded: tuple) -> None:
    retail, tasks, policies, critics = recorded
    public = {
        "domain": "retail",
        "policy": retail.policy,
        "tools": tuple(retail.toolkit.schemas),
        "write_tools": frozenset(tool.name for tool in retail.toolkit if tool.writes),
    }
    for agent in [*policies, *critics]:
        briefing = agent.briefing
        assert type(briefing) is Briefing and not isinstance(briefing, PrivilegedBriefing)
        assert not hasattr(briefing, "task")
        assert {field.name for field in dataclasses.fields(briefing)} == BRIEFING_FIELDS
        for name, value in public.items():
            assert getattr(briefing, name) == value  # the same for every task: no task data inside
        for view in agent.views:
            assert view.briefing is briefing


def test_no_task_object_is_reachable_from_any_view(recorded: tuple) -> None:
    _, _, policies, critics = recorded
    for agent in [*policies, *critics]:
        for view in agent.views:
            leaked = [type(obj).__name__ for obj in _objects(view) if isinstance(obj, PRIVATE_TYPES)]
            assert leaked == []
            assert {field.name for field in dataclasses.fields(view)} <= {
                "briefing",
                "conversation",
                "proposal",
            }


def test_instructions_never_reach_the_agents(recorded: tuple) -> None:
    _, tasks, policies, critics = recorded
    for agent in [*policies, *critics]:
        task = _task_of(agent, tasks)
        goal = task.scenario.instructions.split("Your goal: ", 1)[1].split("\n", 1)[0]
        for view in agent.views:
            text = _text(view)
            assert json.dumps(task.scenario.instructions)[1:-1].lower() not in text
            assert json.dumps(goal)[1:-1].lower() not in text
            if task.scenario.persona:
                assert json.dumps(task.scenario.persona)[1:-1].lower() not in text


def _public_text(retail: Domain, task: Task) -> str:
    """What any agent may know of a task without asking: the domain's public face and the request."""
    return (retail.policy + json.dumps(retail.toolkit.schemas) + task.scenario.request).lower()


def _secrets(retail: Domain, task: Task) -> dict[str, list[str]]:
    public = _public_text(retail, task)
    secrets = {
        "fact": [fact.value for fact in task.scenario.facts],
        "ground-truth argument": [s for call in task.actions for s in _strings(call.arguments)],
        "expected-state value": _changed_values(retail, task),
    }
    return {kind: sorted({v for v in values if v.lower() not in public}) for kind, values in secrets.items()}


def test_the_first_view_holds_no_secret(recorded: tuple) -> None:
    retail, tasks, policies, _ = recorded
    checked = 0
    for policy in policies:
        task = _task_of(policy, tasks)
        first = policy.views[0]
        assert len(first.conversation) == 1 and isinstance(first.conversation[0], UserTurn)
        assert first.conversation[0].text == task.scenario.request
        text = _text(first)
        for kind, values in _secrets(retail, task).items():
            for value in values:
                assert value.lower() not in text, f"{task.id}: {kind} {value!r} in the first view"
                checked += 1
    assert checked > 100


def _legitimate_text(view: PolicyView) -> str:
    """What the user said and what tools returned, in this view."""
    parts = [e.text for e in view.conversation if isinstance(e, UserTurn)]
    parts += [e.content for e in view.conversation if isinstance(e, ToolResultTurn)]
    return "\n".join(parts).lower()


def test_secrets_appear_only_after_a_legitimate_channel_showed_them(recorded: tuple) -> None:
    retail, tasks, policies, critics = recorded
    for agent in [*policies, *critics]:
        task = _task_of(agent, tasks)
        secrets = _secrets(retail, task)
        for view in agent.views:
            text, seen = _text(view), _legitimate_text(view)
            for kind, values in secrets.items():
                for value in values:
                    if value.lower() in text:
                        assert value.lower() in seen, f"{task.id}: {kind} {value!r} reached the agent unseen"


def test_facts_are_revealed_only_when_asked(recorded: tuple) -> None:
    retail, tasks, policies, _ = recorded
    unrevealed_checked = 0
    for policy in policies:
        task = _task_of(policy, tasks)
        for view in policy.views:
            asked = " ".join(
                e.action.text.lower()
                for e in view.conversation
                if isinstance(e, AgentTurn) and isinstance(e.action, ReplyAction)
            )
            said = " ".join(e.text for e in view.conversation[1:] if isinstance(e, UserTurn))
            for fact in task.scenario.facts:
                if not any(keyword.lower() in asked for keyword in fact.keywords):
                    assert fact.statement not in said, f"{task.id}: {fact.name} told before it was asked"
                    if fact.value.lower() not in _public_text(retail, task):
                        assert fact.value.lower() not in _text(view) or (
                            fact.value.lower() in _legitimate_text(view)
                        )
                    unrevealed_checked += 1
    assert unrevealed_checked > 100


def test_a_privileged_agent_does_get_the_task(tmp_path: Path) -> None:
    """The control: the same road hands the task to an agent marked privileged."""
    retail = load_domain("retail")
    task = retail.tasks("test")[0]
    from castbench.agents.views import briefing_for

    assert isinstance(briefing_for(retail, task, 1, 0, privileged=True), PrivilegedBriefing)
    assert type(briefing_for(retail, task, 1, 0, privileged=False)) is Briefing
