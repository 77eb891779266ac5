"""Tool schemas come from signatures and docstrings; a bad call is an observation for the agent,
never an exception; a tool's own bug is a `ToolCrash`."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Literal

import pytest

from castbench.domain import Database, Domain, ToolCrash, Toolkit, load_domain, read_tool, write_tool
from tests.core.toy import Counter, build_toy_domain


@pytest.fixture
def toy(tmp_path: Path) -> Domain:
    return build_toy_domain(tmp_path)


def _function(toolkit: Toolkit, name: str) -> dict:
    return next(s["function"] for s in toolkit.schemas if s["function"]["name"] == name)


def test_schema_comes_from_signature_and_docstring(toy: Domain) -> None:
    schema = _function(toy.toolkit, "configure")
    assert schema["description"] == "Set a counter's mode, tags and note."
    parameters = schema["parameters"]
    assert parameters["type"] == "object" and parameters["additionalProperties"] is False
    assert list(parameters["properties"]) == ["name", "mode", "tags", "note"]
    assert parameters["required"] == ["name", "mode", "tags"]
    properties = parameters["properties"]
    assert properties["name"] == {"type": "string", "description": "The counter's name."}
    assert properties["mode"]["enum"] == ["a", "b"]
    assert properties["mode"]["description"] == "Which mode the counter runs in."
    assert properties["tags"]["type"] == "array" and properties["tags"]["items"] == {"type": "string"}
    assert properties["note"]["default"] == "" and properties["note"]["description"] == "A free-text note."
    assert "title" not in json.dumps(schema)


def test_long_description_and_kind(toy: Domain) -> None:
    assert _function(toy.toolkit, "add")["description"] == (
        "Add an amount to a counter.\n\nA counter never goes below zero."
    )
    assert _function(toy.toolkit, "add")["parameters"]["properties"]["amount"]["type"] == "integer"
    assert toy.toolkit.is_write("add") and not toy.toolkit.is_write("get_counter")
    assert not toy.toolkit.is_write("no_such_tool")
    assert toy.toolkit.names == [
        "get_counter",
        "add",
        "set_value",
        "configure",
        "transfer",
        "open_ticket",
        "crash",
    ]


def test_every_retail_parameter_is_in_the_schema() -> None:
    retail = load_domain("retail")
    for tool in retail.toolkit:
        parameters = list(inspect.signature(tool.function).parameters.values())[1:]
        schema = tool.schema["function"]["parameters"]
        assert list(schema["properties"]) == [p.name for p in parameters], tool.name
        assert schema["required"] == [p.name for p in parameters if p.default is inspect.Parameter.empty]
        for name, spec in schema["properties"].items():
            assert spec.get("description"), f"{tool.name}.{name}"


def test_a_tool_without_docstring_or_types_is_refused() -> None:
    def no_doc(db: Database, name: str) -> str:
        return name

    def untyped(db: Database, name):  # type: ignore[no-untyped-def]
        """Untyped.

        Args:
            name: A name.
        """

    def undocumented(db: Database, name: str, extra: int) -> str:
        """Documents only one parameter.

        Args:
            name: A name.
        """
        return name

    with pytest.raises(TypeError, match="needs a docstring"):
        read_tool(no_doc)
    with pytest.raises(TypeError, match="parameter 'name' needs a type"):
        read_tool(untyped)
    with pytest.raises(TypeError, match="parameter 'extra' is undocumented"):
        write_tool(undocumented)


def test_duplicate_tool_names_are_refused() -> None:
    def echo(db: Database, mode: Literal["x"]) -> str:
        """Echo.

        Args:
            mode: The mode.
        """
        return mode

    with pytest.raises(ValueError, match="duplicate tool name 'echo'"):
        Toolkit([read_tool(echo), read_tool(echo)])


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        (
            "frobnicate",
            {},
            "unknown tool 'frobnicate'. Available tools: get_counter, add, set_value, configure",
        ),
        ("add", '{"name": "x", "amount": ', "arguments for add are not valid JSON"),
        ("add", "[1, 2]", "arguments for add must be a JSON object"),
        ("add", {"name": "x"}, "invalid arguments for add: missing argument 'amount'"),
        ("add", {"name": "x", "amount": "lots"}, "invalid arguments for add: argument 'amount'"),
        ("add", {"name": "x", "amount": 1, "colour": "red"}, "unknown argument 'colour'"),
        ("configure", {"name": "x", "mode": "c", "tags": []}, "argument 'mode': Input should be 'a' or 'b'"),
        ("configure", {"name": "x", "mode": "a", "tags": "red"}, "argument 'tags'"),
        ("add", {"name": "nope", "amount": 1}, "Error: counters 'nope' not found"),
        ("add", {"name": "x", "amount": -6}, "Error: a counter cannot go below zero"),
    ],
)
def test_bad_calls_are_error_observations(toy: Domain, name: str, arguments: object, expected: str) -> None:
    db = toy.fresh_database()
    observation = toy.toolkit.call(db, name, arguments)  # type: ignore[arg-type]
    assert observation.error
    assert observation.content.startswith("Error")
    assert expected in observation.content
    assert db.touched() == {}


def test_unknown_tool_lists_every_available_tool(toy: Domain) -> None:
    content = toy.toolkit.call(toy.fresh_database(), "frobnicate", {}).content
    for name in toy.toolkit.names:
        assert name in content


def test_json_text_arguments_are_accepted(toy: Domain) -> None:
    db = toy.fresh_database()
    observation = toy.toolkit.call(db, "add", '{"name": "x", "amount": "2"}')
    assert not observation.error
    assert json.loads(observation.content)["value"] == 7
    assert db.get(Counter, "x").value == 7


def test_a_crash_is_a_tool_crash_not_an_observation(toy: Domain) -> None:
    with pytest.raises(ToolCrash) as caught:
        toy.toolkit.call(toy.fresh_database(), "crash", {"name": "x"})
    assert "crash" in str(caught.value) and "{'name': 'x'}" in str(caught.value)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)
