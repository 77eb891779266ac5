"""A task file that cannot be used says which file, which task and which field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from castbench._domain.task import load_tasks
from castbench.domain import TaskFileError
from tests.core.toy import add_call, build_toy_domain, toy_task


def _write(path: Path, tasks: Any) -> Path:
    path.write_text(tasks if isinstance(tasks, str) else json.dumps(tasks))
    return path


def _error(path: Path) -> str:
    with pytest.raises(TaskFileError) as caught:
        load_tasks(path)
    return str(caught.value)


def test_a_good_file_loads_in_order(tmp_path: Path) -> None:
    tasks = [toy_task("t-1", [add_call("x", 1)]), toy_task("t-2", [], outcome="no_change")]
    loaded = load_tasks(_write(tmp_path / "test.json", tasks))
    assert [task.id for task in loaded] == ["t-1", "t-2"]
    assert loaded[0].actions[0].arguments == {"name": "x", "amount": 1}


def test_missing_field(tmp_path: Path) -> None:
    task = toy_task("t-7", [])
    del task["family"]
    path = _write(tmp_path / "test.json", [toy_task("t-1", []), task])
    message = _error(path)
    assert str(path) in message and "task t-7" in message and "field 'family'" in message
    assert "Field required" in message


def test_missing_nested_field(tmp_path: Path) -> None:
    task = toy_task("t-3", [])
    del task["scenario"]["instructions"]
    message = _error(_write(tmp_path / "test.json", [task]))
    assert "task t-3" in message and "field 'scenario.instructions'" in message


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("outcome", "maybe", "field 'outcome'"),
        ("ordered", "sometimes", "field 'ordered'"),
        ("actions", "add x", "field 'actions'"),
        ("required_outputs", "12.50", "field 'required_outputs'"),
    ],
)
def test_wrong_type(tmp_path: Path, field: str, value: object, where: str) -> None:
    task = toy_task("t-9", [])
    task[field] = value
    path = _write(tmp_path / "test.json", [task])
    message = _error(path)
    assert str(path) in message and "task t-9" in message and where in message


def test_wrong_type_in_an_action(tmp_path: Path) -> None:
    task = toy_task("t-4", [{"name": "add", "arguments": ["x", 1]}])
    message = _error(_write(tmp_path / "test.json", [task]))
    assert "task t-4" in message and "field 'actions.0.arguments'" in message


def test_unknown_field(tmp_path: Path) -> None:
    task = toy_task("t-5", [])
    task["expected_reward"] = 1
    message = _error(_write(tmp_path / "test.json", [task]))
    assert "task t-5" in message and "field 'expected_reward'" in message


def test_a_task_without_id_is_named_by_position(tmp_path: Path) -> None:
    task = toy_task("t-1", [])
    del task["id"]
    message = _error(_write(tmp_path / "test.json", [toy_task("t-0", []), task]))
    assert "task #1" in message and "field 'id'" in message


def test_duplicate_id(tmp_path: Path) -> None:
    path = _write(tmp_path / "test.json", [toy_task("t-1", []), toy_task("t-2", []), toy_task("t-1", [])])
    message = _error(path)
    assert str(path) in message and "task t-1" in message and "duplicate task id" in message


def test_not_json_and_not_a_list(tmp_path: Path) -> None:
    broken = _write(tmp_path / "broken.json", '[{"id": "t-1",')
    assert str(broken) in _error(broken) and "cannot read task file" in _error(broken)
    single = _write(tmp_path / "single.json", toy_task("t-1", []))
    assert "expected a JSON list of tasks, got dict" in _error(single)
    entry = _write(tmp_path / "entry.json", ["t-1"])
    assert "task #0" in _error(entry)


def test_split_mismatch(tmp_path: Path) -> None:
    domain = build_toy_domain(
        tmp_path, splits={"test": [toy_task("t-1", []), toy_task("t-2", [], split="train")]}
    )
    with pytest.raises(TaskFileError) as caught:
        domain.tasks("test")
    message = str(caught.value)
    assert str(tmp_path / "tasks" / "test.json") in message
    assert "task t-2" in message and "field 'split'" in message and "'train'" in message


def test_unknown_split_names_the_file_it_looked_for(tmp_path: Path) -> None:
    domain = build_toy_domain(tmp_path)
    with pytest.raises(TaskFileError, match=r"has no split 'dev' \(looked for .*dev\.json\)"):
        domain.tasks("dev")
    assert domain.splits == ["test"]
