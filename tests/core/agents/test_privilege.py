"""No privileged data reaches a non-privileged policy or critic, in any domain.

A recording policy, critic and user (loaded by import path, as a team's own would be) keep every
view and message they receive over tasks of every family of every domain. Nothing in the agents'
views may carry the task: not the `Task` object, not the user's instructions or goal, not a fact
the user has not said yet, not a ground-truth argument or an expected-state value before a
legitimate channel (what the user said, what a tool returned) showed it. The user hears only the
agent's replies; the user's own tools (telecom's phone) stay on the user's side: the agent learns
what the phone shows only from what the user says.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, NamedTuple

import pytest
from pydantic import BaseModel

from castbench._agents.views import Briefing, PolicyView, PrivilegedBriefing, briefing_for
from castbench._base.conversation import AgentTurn, ReplyAction, ToolResultTurn, UserTurn
from castbench._run.api import evaluate
from castbench._trial.seeds import trial_seed
from castbench.domain import Database, Domain, Fact, GradingSpec, Task, ToolCall, UserScenario
from tests.core.fixtures_agents import RecordingCritic, RecordingPolicy, RecordingUser
from tests.support import sqlite_url

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


class Recorded(NamedTuple):
    domain: Domain
    tasks: list[Task]
    policies: list[RecordingPolicy]
    critics: list[RecordingCritic]
    users: list[RecordingUser]


@pytest.fixture(scope="module")
def recorded(domain: Domain, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    tasks = _pick_tasks(domain)
    for recorder in (RecordingPolicy, RecordingCritic, RecordingUser):
        recorder.instances.clear()
    result = evaluate(
        domains=domain.name,
        policy="tests.core.fixtures_agents:RecordingPolicy",
        critic="tests.core.fixtures_agents:RecordingCritic",
        user="tests.core.fixtures_agents:RecordingUser",
        trials=2,
        tasks=[task.id for task in tasks],
        db=sqlite_url(tmp_path_factory.mktemp("privilege") / "r.db"),
        in_process=True,  # the recorders keep what they saw where this test can read it
    )
    assert result.summary.config.privileged == []
    return Recorded(
        domain,
        tasks,
        list(RecordingPolicy.instances),
        list(RecordingCritic.instances),
        list(RecordingUser.instances),
    )


_TEXT: dict[int, tuple[Any, str]] = {}


def _text(view: Any) -> str:
    """The whole view as lower-case JSON (cached: views are immutable; the cache keeps each view
    alive, so an id is never reused for another view)."""
    if id(view) not in _TEXT:
        _TEXT[id(view)] = (view, json.dumps(_plain(view)).lower())
    return _TEXT[id(view)][1]


def _task_of(instance: Any, recorded: Recorded) -> Task:
    seed, index = instance.briefing.seed, instance.briefing.trial_index
    (task,) = [t for t in recorded.tasks if trial_seed(0, recorded.domain.name, t.id, index) == seed]
    return task


def test_every_trial_was_recorded(recorded: Recorded) -> None:
    policies, critics, users = recorded.policies, recorded.critics, recorded.users
    assert len(policies) == len(critics) == len(users) == 2 * len(recorded.tasks) >= 8
    assert {_task_of(p, recorded).id for p in policies} == {t.id for t in recorded.tasks}
    assert all(p.views for p in policies) and any(c.views for c in critics)
    # the recording policy reached tools, so tool results are part of what is checked
    assert any(
        isinstance(e, ToolResultTurn) and not e.error for p in policies for e in p.views[-1].conversation
    )


def test_briefings_are_plain_and_carry_nothing_of_the_task(recorded: Recorded) -> None:
    domain = recorded.domain
    public = {
        "domain": domain.name,
        "policy": domain.policy,
        "tools": tuple(domain.toolkit.schemas),
        "write_tools": frozenset(tool.name for tool in domain.toolkit if tool.writes),
    }
    for agent in [*recorded.policies, *recorded.critics]:
        briefing = agent.briefing
        assert type(briefing) is Briefing and not isinstance(briefing, PrivilegedBriefing)
        assert not hasattr(briefing, "task")
        assert {field.name for field in dataclasses.fields(briefing)} == BRIEFING_FIELDS
        for name, value in public.items():
            assert getattr(briefing, name) == value  # the same for every task: no task data inside
        for view in agent.views:
            assert view.briefing is briefing


def test_no_task_object_is_reachable_from_any_view(recorded: Recorded) -> None:
    for agent in [*recorded.policies, *recorded.critics]:
        for view in agent.views:
            leaked = [type(obj).__name__ for obj in _objects(view) if isinstance(obj, PRIVATE_TYPES)]
            assert leaked == []
            assert {field.name for field in dataclasses.fields(view)} <= {
                "briefing",
                "conversation",
                "proposal",
            }


def test_instructions_never_reach_the_agents(recorded: Recorded) -> None:
    for agent in [*recorded.policies, *recorded.critics]:
        task = _task_of(agent, recorded)
        goal = task.scenario.instructions.split("Your goal: ", 1)[1].split("\n", 1)[0]
        for view in agent.views:
            text = _text(view)
            assert json.dumps(task.scenario.instructions)[1:-1].lower() not in text
            if goal.lower() not in task.scenario.request.lower():  # else the user said it openly
                assert json.dumps(goal)[1:-1].lower() not in text
            if task.scenario.persona:
                assert json.dumps(task.scenario.persona)[1:-1].lower() not in text


def _public_text(domain: Domain, task: Task) -> str:
    """What any agent may know of a task without asking: the domain's public face and the request."""
    return (domain.policy + json.dumps(domain.toolkit.schemas) + task.scenario.request).lower()


def _secrets(domain: Domain, task: Task) -> dict[str, list[str]]:
    public = _public_text(domain, task)
    secrets = {
        "fact": [fact.value for fact in task.scenario.facts],
        "ground-truth argument": [s for call in task.actions for s in _strings(call.arguments)],
        "expected-state value": _changed_values(domain, task),
    }
    return {kind: sorted({v for v in values if v.lower() not in public}) for kind, values in secrets.items()}


def test_the_first_view_holds_no_secret(recorded: Recorded) -> None:
    checked = 0
    for policy in recorded.policies:
        task = _task_of(policy, recorded)
        first = policy.views[0]
        assert len(first.conversation) == 1 and isinstance(first.conversation[0], UserTurn)
        assert first.conversation[0].text == task.scenario.request
        text = _text(first)
        for kind, values in _secrets(recorded.domain, task).items():
            for value in values:
                assert value.lower() not in text, f"{task.id}: {kind} {value!r} in the first view"
                checked += 1
    assert checked > 2 * len(recorded.policies)


def _legitimate_text(view: PolicyView) -> str:
    """What the user said and what tools returned, in this view."""
    parts = [e.text for e in view.conversation if isinstance(e, UserTurn)]
    parts += [e.content for e in view.conversation if isinstance(e, ToolResultTurn)]
    return "\n".join(parts).lower()


def test_secrets_appear_only_after_a_legitimate_channel_showed_them(recorded: Recorded) -> None:
    for agent in [*recorded.policies, *recorded.critics]:
        task = _task_of(agent, recorded)
        secrets = _secrets(recorded.domain, task)
        for view in agent.views:
            text, seen = _text(view), _legitimate_text(view)
            for kind, values in secrets.items():
                for value in values:
                    if value.lower() in text:
                        assert value.lower() in seen, f"{task.id}: {kind} {value!r} reached the agent unseen"


def test_facts_are_revealed_only_when_asked(recorded: Recorded) -> None:
    unrevealed_checked = revealed = 0
    for policy in recorded.policies:
        task = _task_of(policy, recorded)
        for view in policy.views:
            asked = " ".join(
                e.action.text.lower()
                for e in view.conversation
                if isinstance(e, AgentTurn) and isinstance(e.action, ReplyAction)
            )
            said = " ".join(e.text for e in view.conversation[1:] if isinstance(e, UserTurn))
            for fact in task.scenario.facts:
                if any(keyword.lower() in asked for keyword in fact.keywords):
                    revealed += fact.statement in said
                    continue
                assert fact.statement not in said, f"{task.id}: {fact.name} told before it was asked"
                if fact.value.lower() not in _public_text(recorded.domain, task):
                    assert fact.value.lower() not in _text(view) or (
                        fact.value.lower() in _legitimate_text(view)
                    )
                unrevealed_checked += 1
    assert unrevealed_checked > 0 and revealed > 0  # both kinds of fact were checked


def test_the_user_hears_only_the_agents_replies(recorded: Recorded) -> None:
    """The simulated user's view: its scenario and what the agent said, never a tool result."""
    replies = {text for policy in recorded.policies for text in policy.replies}
    results = {
        event.content
        for policy in recorded.policies
        for event in policy.views[-1].conversation
        if isinstance(event, ToolResultTurn)
    }
    heard = [message for user in recorded.users for message in user.messages]
    assert heard and set(heard) <= replies
    assert not any(result in message for result in results for message in heard if len(result) > 20)


def test_the_users_own_tools_stay_on_the_users_side(recorded: Recorded) -> None:
    """Telecom's phone tools are the user's: not in the agent's briefing, never run as the agent's
    tool call; what the phone shows reaches the agent only in the user's words. Domains without
    user tools give the user none."""
    domain = recorded.domain
    user_tools = domain.toolkit_for("user")
    names = {tool.name for tool in user_tools}
    assert bool(names) is (domain.name == "telecom")
    for user in recorded.users:
        assert user.briefing.user_tools == tuple(user_tools.schemas)
        assert (user.briefing.perform is not None) is bool(names)
    agent_tools = {tool["function"]["name"] for tool in domain.toolkit.schemas}
    assert not names & agent_tools
    for agent in [*recorded.policies, *recorded.critics]:
        assert not names & agent.briefing.write_tools
        for view in agent.views:
            assert not any(isinstance(e, ToolResultTurn) and e.name in names for e in view.conversation)
    said = [e.text for p in recorded.policies for e in p.views[-1].conversation if isinstance(e, UserTurn)]
    shown = [text for text in said if text.startswith("Done. My device now shows:")]
    assert bool(shown) is bool(names)  # the phone was used, and told about by its owner


def test_an_agent_cannot_run_the_users_tools(telecom: Domain) -> None:
    db: Database = telecom.fresh_database()
    phone = telecom.tasks("test")[0].scenario.device_steps[0].call.arguments["phone_number"]
    for tool in telecom.toolkit_for("user"):
        arguments = {
            "phone_number": phone,
            **({"on": True} if "on" in tool.arguments_model.model_fields else {}),
        }
        observation = telecom.toolkit.call(db, tool.name, arguments)
        assert observation.error and tool.name in observation.content
    assert not db.has_changes()


def test_a_privileged_agent_does_get_the_task(domain: Domain) -> None:
    """The control: the same road hands the task to an agent marked privileged."""
    task = domain.tasks("test")[0]
    assert isinstance(briefing_for(domain, task, 1, 0, privileged=True), PrivilegedBriefing)
    assert type(briefing_for(domain, task, 1, 0, privileged=False)) is Briefing
