"""Tools are plain typed Python functions; their JSON schema and validation come from them.

A tool's first parameter is the trial's `Database`; the rest are its arguments. The OpenAI-style
schema is generated from the signature and the Google-style docstring (never written by hand),
and incoming arguments are validated by a pydantic model built from the same signature, so the
schema the agent sees and the check the harness applies cannot drift apart.

What the agent did wrong (unknown tool, arguments that are not JSON, a missing or mistyped
argument, a `ToolError` raised by the tool's own precondition checks) becomes an error
observation. A tool that crashes for any other reason is a bug of the domain: it is rolled back
and raised as `ToolCrash`, which the runner reports as a harness error, never as an agent failure.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin, get_type_hints

import docstring_parser
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from castbench._domain.database import Database, Record, RecordNotFound, Row

__all__ = [
    "Observation",
    "Tool",
    "ToolCrash",
    "ToolError",
    "Toolkit",
    "read_tool",
    "write_tool",
]

ToolKind = Literal["read", "write"]


class ToolError(Exception):
    """Raised by a tool when the request breaks a precondition; the message goes to the agent."""


class ToolCrash(RuntimeError):
    """A tool raised something other than `ToolError`: a bug in the domain, not the agent."""


@dataclass(frozen=True, slots=True)
class Observation:
    """What the environment returned for one tool call."""

    content: str
    error: bool = False
    ends_conversation: bool = False


@dataclass(frozen=True)
class Tool:
    name: str
    kind: ToolKind
    description: str
    function: Callable[..., Any]
    arguments_model: type[BaseModel]
    ends_conversation: bool = False
    returns: type[Record] | None = None
    """The record type its result holds (one, or a list of them), from its return annotation
    (`-> Order`, `-> list[Plan]`) or `returns=`: how the rules critic learns what a result showed
    without knowing the tool's name."""
    authenticates: bool = False
    """A successful result identifies the user (retail's and telecom's give their id; airline's
    says they are verified)."""
    public: bool = False
    """Needs no authenticated user (a catalogue look-up, a calculator, a hand-off)."""
    requires: Mapping[str, Any] = field(default_factory=dict)
    """Field values the `returns` record it acts on (keyed by the argument named like that
    record's key field) must have before the call: a policy precondition the rules check."""
    view: Callable[[Any], list[Row]] | None = None
    """How a result that is not the `returns` record itself reads as (partial) rows of it: a
    flight search's offers each show a flight's route and one date's status and prices."""
    schema: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", _openai_schema(self))

    @property
    def writes(self) -> bool:
        return self.kind == "write"

    def __call__(self, db: Database, **arguments: Any) -> Any:
        return self.function(db, **arguments)


@dataclass(frozen=True, slots=True)
class _Marks:
    """What a tool decorator declares beyond the function itself."""

    ends_conversation: bool = False
    returns: type[Record] | None = None
    authenticates: bool = False
    public: bool = False
    requires: Mapping[str, Any] = field(default_factory=dict)
    view: Callable[[Any], list[Row]] | None = None


def record_type(annotation: Any) -> type[Record] | None:
    """`Order` for `-> Order` or `-> list[Order]` (or a field so typed); None for anything else."""
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation) or (None,)
    return annotation if isinstance(annotation, type) and issubclass(annotation, Record) else None


def _make_tool(function: Callable[..., Any], kind: ToolKind, marks: _Marks) -> Tool:
    doc = docstring_parser.parse(inspect.getdoc(function) or "", docstring_parser.DocstringStyle.GOOGLE)
    if not doc.short_description:
        raise TypeError(f"tool {function.__qualname__} needs a docstring: it is the agent's manual")
    described = {param.arg_name: " ".join((param.description or "").split()) for param in doc.params}
    hints = get_type_hints(function, include_extras=True)
    parameters = list(inspect.signature(function).parameters.values())
    if not parameters:
        raise TypeError(f"tool {function.__qualname__} must take the Database as first parameter")
    fields: dict[str, Any] = {}
    for param in parameters[1:]:
        if param.name not in hints:
            raise TypeError(f"tool {function.__qualname__}: parameter '{param.name}' needs a type")
        if param.name not in described:
            raise TypeError(f"tool {function.__qualname__}: parameter '{param.name}' is undocumented")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], Field(default, description=described[param.name]))
    model = create_model(  # type: ignore[call-overload]
        f"{function.__name__}_arguments",
        __config__=ConfigDict(extra="forbid", strict=False),
        **fields,
    )
    description = doc.short_description
    if doc.long_description:
        description = f"{description}\n\n{doc.long_description}"
    returns = marks.returns or record_type(hints.get("return"))
    if (marks.requires or marks.view) and returns is None:
        mark = "requires=" if marks.requires else "view="
        raise TypeError(f"tool {function.__qualname__}: {mark} needs the record it acts on (returns=)")
    return Tool(
        function.__name__,
        kind,
        description,
        function,
        model,
        marks.ends_conversation,
        returns,
        marks.authenticates,
        marks.public,
        dict(marks.requires),
        marks.view,
    )


def read_tool(
    function: Callable[..., Any] | None = None,
    *,
    ends_conversation: bool = False,
    returns: type[Record] | None = None,
    authenticates: bool = False,
    public: bool = False,
    view: Callable[[Any], list[Row]] | None = None,
) -> Any:
    """Mark a function as a tool that only reads state (a hand-off to a human, say, may end the
    conversation without writing anything). `returns` names the record type of a result the
    annotation does not (`-> dict[str, Any]`); `authenticates`, `public` and `view`: see `Tool`."""
    marks = _Marks(ends_conversation, returns, authenticates, public, view=view)
    if function is None:
        return lambda f: _make_tool(f, "read", marks)
    return _make_tool(function, "read", marks)


def write_tool(
    function: Callable[..., Any] | None = None,
    *,
    ends_conversation: bool = False,
    returns: type[Record] | None = None,
    requires: Mapping[str, Any] | None = None,
) -> Any:
    """Mark a function as a tool that may change state (needs the user's confirmation);
    `requires`: see `Tool`."""
    marks = _Marks(ends_conversation, returns, requires=dict(requires or {}))
    if function is None:
        return lambda f: _make_tool(f, "write", marks)
    return _make_tool(function, "write", marks)


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _strip_titles(value) for key, value in node.items() if key != "title"}
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    return node


def _openai_schema(tool: Tool) -> dict[str, Any]:
    parameters = _strip_titles(tool.arguments_model.model_json_schema())
    parameters.setdefault("properties", {})
    parameters.setdefault("required", [])
    parameters["additionalProperties"] = False
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    }


def _render(result: Any) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        try:
            return result.model_dump_json()
        except ValueError:  # agent text it holds (a lone surrogate): json escapes it
            return json.dumps(result.model_dump(mode="json"), separators=(",", ":"))
    if isinstance(result, list) and result and isinstance(result[0], BaseModel):
        return json.dumps([item.model_dump(mode="json") for item in result])
    return json.dumps(result, default=str)


def _argument_json(value: object) -> Any:
    """A validated argument that JSON cannot write as it is (a model, a date), for a cache key."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return repr(value)


def _describe_validation(tool: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(arguments)"
        kind = item["type"]
        if kind == "missing":
            problems.append(f"missing argument '{where}'")
        elif kind == "extra_forbidden":
            problems.append(f"unknown argument '{where}'")
        else:
            problems.append(f"argument '{where}': {item['msg']}")
    return f"Error: invalid arguments for {tool}: " + "; ".join(problems)


class Toolkit:
    """The ordered tools of a domain, with the schemas agents see."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name '{tool.name}'")
            self._tools[tool.name] = tool
        self._schemas_json = json.dumps([tool.schema for tool in self._tools.values()])

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The tools' schemas as fresh copies: an agent that edits what it was handed changes
        nothing that later trials, the critic or the domain itself see."""
        return orjson.loads(self._schemas_json)  # type: ignore[no-any-return]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def is_write(self, name: str) -> bool:
        tool = self._tools.get(name)
        return tool is not None and tool.writes

    def validate(self, name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """Parsed, validated arguments; raises `ToolError` with a message for the agent."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(f"Error: unknown tool '{name}'. Available tools: {', '.join(self._tools)}")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise ToolError(f"Error: arguments for {name} are not valid JSON ({exc.msg})") from exc
            except ValueError as exc:  # an integer of thousands of digits: no JSON reader takes it
                raise ToolError(f"Error: arguments for {name} cannot be read ({exc})") from exc
        if not isinstance(arguments, Mapping):
            raise ToolError(f"Error: arguments for {name} must be a JSON object")
        try:
            parsed = tool.arguments_model.model_validate(dict(arguments))
        except ValidationError as exc:
            raise ToolError(_describe_validation(name, exc)) from exc
        return {key: getattr(parsed, key) for key in type(parsed).model_fields}

    def call(self, db: Database, name: str, arguments: Mapping[str, Any] | str) -> Observation:
        """Run one tool call atomically against `db`.

        A read tool's answer is shared between the sandboxes of one pristine state whose tables
        it read are unchanged (`Database.read_through`): the eight trials of a task, a replay and
        the labeler's twins ask the same look-ups, and some of them (a flight search, a catalogue
        listing) validate hundreds of rows."""
        try:
            values = self.validate(name, arguments)
        except ToolError as exc:
            return Observation(str(exc), error=True)
        tool = self._tools[name]
        if tool.writes:
            return self._run(db, tool, values)
        key = (tool.function, json.dumps(values, sort_keys=True, default=_argument_json))
        return db.read_through(key, lambda: self._run(db, tool, values), lambda answer: len(answer.content))

    @staticmethod
    def _run(db: Database, tool: Tool, values: dict[str, Any]) -> Observation:
        name = tool.name
        try:
            with db.transaction():
                result = tool.function(db, **values)
        except ToolError as exc:
            message = str(exc)
            return Observation(message if message.startswith("Error") else f"Error: {message}", error=True)
        except RecordNotFound as exc:
            return Observation(f"Error: {exc}", error=True)
        except Exception as exc:  # a domain bug: rolled back, reported as a harness error
            raise ToolCrash(f"tool {name} crashed on {dict(values)!r}: {exc!r}") from exc
        return Observation(_render(result), ends_conversation=tool.ends_conversation)
