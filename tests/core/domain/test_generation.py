"""The shared generator plumbing: file formats, checks of freshly generated tasks, Domain.with_state,
and the device-step check it relies on in `validate_task`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from random import Random

import pytest

import castbench_retail
import castbench_telecom
from castbench._domain.task import Rival, load_tasks
from castbench.domain import (
    Database,
    DeviceStep,
    Domain,
    ExpectedStateError,
    Fact,
    Mention,
    Task,
    ToolCall,
    Toolkit,
    read_tool,
)
from castbench_authoring.generation import (
    DraftBase,
    GenerationError,
    Generator,
    confirm_answer,
    customer_pools,
    dump_state,
    dump_tasks,
    spoken_list,
    write_generated,
)
from castbench_authoring.validate import validate_task
from castbench_retail.generate import GENERATOR as RETAIL


def _retail_task(**update: object) -> Task:
    """The first retail test task that changes the state, with `update` applied."""
    task = next(t for t in castbench_retail.domain.tasks("test") if t.outcome == "change")
    return task.model_copy(update=update)


# -- file formats --------------------------------------------------------------------------------


def test_state_dump_is_one_row_per_line_and_round_trips() -> None:
    state = {
        "users": {"u1": {"name": "Zoë", "tags": ["a", "b"], "address": {"city": "Köln"}}, "u2": {"n": 1}},
        "empty": {},
        "_sequences": {"ticket": {"next": 3, "prefix": "T-", "width": 4}},
    }
    text = dump_state(state)
    assert json.loads(text) == state
    # {, users {, 2 rows, }, empty {}, _sequences {, 1 row, }, }
    assert len(text.splitlines()) == 10 and text.endswith("}\n")
    assert (
        '  "u1": {"name":"Zo\\u00eb","tags":["a","b"],"address":{"city":"K\\u00f6ln"}},' in text.splitlines()
    )


def test_task_dump_round_trips_and_leaves_defaults_out(tmp_path: Path) -> None:
    tasks = castbench_retail.domain.tasks("test")[:5]
    text = dump_tasks(tasks)
    assert [Task.model_validate(item) for item in json.loads(text)] == tasks
    assert all("grading" not in item for item in json.loads(text))
    write_generated(tmp_path, castbench_retail.domain.pristine, {"test": tasks})
    assert load_tasks(tmp_path / "tasks" / "test.json") == tasks
    assert json.loads((tmp_path / "data" / "state.json").read_text()) == castbench_retail.domain.pristine


# -- checks of generated tasks ---------------------------------------------------------------------


def test_a_broken_generated_task_is_reported_with_its_id() -> None:
    good = _retail_task()
    wrong_outcome = _retail_task(id="retail-test-9001", outcome="no_change")
    unseen_output = _retail_task(id="retail-test-9002", required_outputs=["no tool ever says this"])
    with pytest.raises(GenerationError) as raised:
        RETAIL.check(castbench_retail.domain.pristine, {"test": [good, wrong_outcome, unseen_output]})
    message = str(raised.value)
    assert "retail task retail-test-9001: outcome is 'no_change' but replaying" in message
    assert "retail task retail-test-9002: required output 'no tool ever says this' is never shown" in message
    assert good.id not in message and "nothing written" in message


def test_generated_tasks_are_checked_against_the_generated_state_not_the_package_files() -> None:
    task = _retail_task()
    RETAIL.check(castbench_retail.domain.pristine, {"test": [task]})
    emptied = {table: {} for table in castbench_retail.domain.pristine}
    with pytest.raises(GenerationError, match=task.id):
        RETAIL.check(emptied, {"test": [task]})


# -- Domain.with_state ---------------------------------------------------------------------------


def test_with_state_replays_against_the_given_snapshot() -> None:
    domain = castbench_retail.domain
    task = _retail_task()
    emptied = {table: {} for table in domain.pristine}
    other = domain.with_state(emptied)
    assert other.pristine is emptied and other.fresh_database().pristine is emptied
    assert other.name == domain.name and other.toolkit is domain.toolkit
    with pytest.raises(ExpectedStateError, match=task.id):
        other.replay(task)
    assert domain.replay(task).has_changes()  # the original still reads its own seed state
    copied = json.loads(json.dumps(domain.pristine))
    assert domain.with_state(copied).replay(task).materialize() == domain.replay(task).materialize()


# -- device steps ------------------------------------------------------------------------------


def _device_task() -> Task:
    return next(t for t in castbench_telecom.domain.tasks("test") if len(t.scenario.device_steps) >= 2)


def test_device_steps_of_the_committed_task_trigger_only_themselves() -> None:
    assert validate_task(castbench_telecom.domain, _device_task()) == []


def test_an_instruction_that_sets_off_another_device_step_is_named() -> None:
    task = _device_task()
    first, second, *rest = task.scenario.device_steps
    greedy = first.model_copy(
        update={"instruction": f"{first.instruction} Then say: {' '.join(second.keywords)}."}
    )
    scenario = task.scenario.model_copy(update={"device_steps": [greedy, second, *rest]})
    problems = validate_task(castbench_telecom.domain, task.model_copy(update={"scenario": scenario}))
    assert problems == [
        f"telecom task {task.id}: device step 0 ({first.call.name}): its instruction also sets off "
        f"device step 1 ({second.call.name}, keywords {second.keywords})"
    ]


def test_an_instruction_without_its_own_keywords_is_named() -> None:
    task = _device_task()
    first, *rest = task.scenario.device_steps
    mute = first.model_copy(update={"instruction": "Do the thing."})
    scenario = task.scenario.model_copy(update={"device_steps": [mute, *rest]})
    problems = validate_task(castbench_telecom.domain, task.model_copy(update={"scenario": scenario}))
    assert problems == [
        f"telecom task {task.id}: device step 0 ({first.call.name}): its instruction lacks "
        f"its own keywords {first.keywords}"
    ]


# -- drawing splits ------------------------------------------------------------------------------


@dataclass
class _Person:
    person_id: str

    @property
    def key(self) -> str:
        return self.person_id


@dataclass
class _World:
    people: dict[str, _Person]

    def state(self) -> dict[str, dict[str, dict[str, str]]]:
        return {"people": {key: {"person_id": key} for key in self.people}}


@dataclass
class _Pool:
    world: _World
    people: list[_Person]
    rng: Random


@read_tool
def look(db: Database) -> str:
    """Look around."""
    return "all quiet"


@dataclass
class _Draft:
    family: str
    outcome: str = "no_change"
    request: str = "Hello"
    facts: list[Fact] = field(default_factory=list)
    confirm: bool = True
    persona: str = ""
    actions: list[ToolCall] = field(default_factory=lambda: [ToolCall(name="look")])
    declined_actions: list[ToolCall] = field(default_factory=list)
    required_outputs: list[str] = field(default_factory=list)
    ordered: bool = False
    device_steps: list[DeviceStep] = field(default_factory=list)
    reasons: list[Mention] = field(default_factory=list)
    offer: list[Mention] = field(default_factory=list)
    offer_rivals: list[str] = field(default_factory=list)
    allowed_claims: list[str] = field(default_factory=list)
    false_claims: list[Mention] = field(default_factory=list)
    rivals: list[Rival] = field(default_factory=list)

    def instructions(self) -> str:
        return "Say hello."


def _toy_generator(tmp_path: Path, families: dict) -> Generator:
    domain = Domain("toy", "1-0", tmp_path, [], Toolkit([look]), datetime(2026, 1, 1, tzinfo=UTC))
    return Generator(
        domain,
        7,
        lambda rng: _World({f"p{n}": _Person(f"p{n}") for n in range(10)}),
        families,
        customer_pools(lambda world: world.people.values(), 3, _Pool),
        max_attempts=5,
    )


def test_splits_are_numbered_shuffled_and_drawn_from_disjoint_customers(tmp_path: Path) -> None:
    seen: dict[int, list[str]] = {}

    def hello(pool: _Pool) -> _Draft:
        seen.setdefault(id(pool), [person.person_id for person in pool.people])
        return _Draft("hello")

    splits = _toy_generator(tmp_path, {"hello": (hello, 2, 4)}).generate(out=tmp_path)
    assert [task.id for task in splits["test"]] == ["toy-test-0001", "toy-test-0002"]
    assert [task.id for task in splits["train"]] == [f"toy-train-{n:04d}" for n in range(1, 5)]
    test_people, train_people = seen.values()
    assert len(test_people) == 3 and len(train_people) == 7 and not set(test_people) & set(train_people)
    assert load_tasks(tmp_path / "tasks" / "train.json") == splits["train"]


def test_a_family_that_runs_out_of_entities_is_named(tmp_path: Path) -> None:
    builds = iter([_Draft("scarce"), None, None, None, None, None])
    generator = _toy_generator(tmp_path, {"scarce": (lambda pool: next(builds), 2, 0)})
    with pytest.raises(GenerationError, match="toy: family scarce: only 1 of 2 test tasks found entities"):
        generator.generate(out=tmp_path)
    assert not (tmp_path / "tasks").exists()


# -- the user's brief ------------------------------------------------------------------------------


def test_a_draft_brief_lists_facts_answers_and_notes_in_order() -> None:
    fact = Fact(name="email", value="a@b.c", keywords=["email"], statement="My email is a@b.c.")
    draft = DraftBase(family="f", outcome="change", request="Hi", goal="do it.", facts=[fact], actions=[])
    draft.notes = ["Be brief."]
    brief = draft.brief("Ann Lee", "a customer of a shop", "any ids", confirm_answer(True), "\nYou hold it.")
    assert brief.startswith("You are Ann Lee, a customer of a shop, chatting with its support agent.\n")
    assert (
        "asks for it:\n- My email is a@b.c.\nWhen the agent describes the change and asks you to confirm, "
        in brief
    )
    assert "answer yes.\nYou hold it.\nBe brief.\nYou do not know any ids; never invent" in brief
    assert brief.endswith("Persona: ")
    assert "- (nothing beyond your request)\n" in DraftBase(
        family="f", outcome="no_change", request="Hi", goal="ask.", facts=[], actions=[]
    ).brief("Ann Lee", "a customer of a shop", "any ids", "")
    assert confirm_answer(False, declined="you keep it").endswith(
        "you change your mind: say no, you keep it."
    )
    assert spoken_list(["a"]) == "a" and spoken_list(["a", "b", "c"]) == "a, b and c"
