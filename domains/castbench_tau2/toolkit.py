"""τ²'s tools as a castbench `Toolkit`: τ²'s schemas, τ²'s answers, castbench's sandboxes.

A model sees what τ² shows it: each tool's schema is τ²'s own `openai_schema`. A call runs τ²'s own
tool method with the arguments as given, on a `bridge` view of the trial's state, and its answer
is made as τ²'s `Environment.get_response` makes it: the result through `Environment.to_json_str`,
or `Error: <exception>` for anything the tool raises (an unknown tool too: τ² answers
`Error: Tool '<name>' not found.`). Which tools write is τ²'s own `ToolType` (`WRITE`); a
transfer to a human ends castbench's conversation, as τ²'s user simulator ends it then.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from castbench.domain import Database, Observation, Tool, Toolkit, schema_arguments_model
from castbench_tau2.bridge import SharedRows, bridged_db, commit

__all__ = ["Tau2Tool", "Tau2Toolkit", "tau2_toolkit", "tau2_tools"]

TRANSFER_PREFIX = "transfer_"
IDENTITY_PREFIX = "find_"
"""τ²'s identity look-ups (`find_user_id_by_email`): the tools marked `authenticates`, which is
what the derived rules read."""


@dataclass(frozen=True)
class Tau2Tool(Tool):
    """A τ² tool: its schema is τ²'s `openai_schema` verbatim."""

    info: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", self.info)


class Tau2Toolkit(Toolkit):
    """Runs τ²'s tool methods on a bridged database object, then writes back what changed."""

    def __init__(self, tools: list[Tau2Tool], toolkit_class: type, db_class: type, tables: dict[str, type]):
        super().__init__(tools)
        self._toolkit_class, self._db_class, self._tables = toolkit_class, db_class, tables
        self._to_json = _environment_class().to_json_str
        self._shared: dict[int, SharedRows] = {}

    def shared_rows(self, db: Database) -> SharedRows:
        """The shared scan models of the pristine state `db` runs on (one per domain)."""
        key = id(db.pristine)
        if key not in self._shared:
            self._shared[key] = SharedRows(db.pristine, self._tables)  # type: ignore[arg-type]
        return self._shared[key]

    def call(self, db: Database, name: str, arguments: Mapping[str, Any] | str) -> Observation:
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                return Observation(f"Error: arguments for {name} are not valid JSON ({reason})", error=True)
        if not isinstance(arguments, Mapping):
            return Observation(f"Error: arguments for {name} must be a JSON object", error=True)
        view = bridged_db(self._db_class, db, self._tables, self.shared_rows(db))
        tools = self._toolkit_class(view)
        error = False
        try:
            result = tools.use_tool(tool_name=name, **arguments)
        except Exception as exc:  # τ²'s env answers any exception this way; it is the agent's error
            result, error = f"Error: {exc}", True
        finally:
            commit(view, db, self._tables)
        content = self._to_json(result)
        ends = name in self and self[name].ends_conversation
        return Observation(content, error=error, ends_conversation=ends)


def _environment_class() -> Any:
    from castbench_tau2.source import import_tau2

    return import_tau2("tau2.environment.environment").Environment


def _row_models(db_class: type) -> dict[str, type]:
    """Field name -> row model, for every `Dict[str, Model]` field of τ²'s database model."""
    tables: dict[str, type] = {}
    for name, info in db_class.model_fields.items():  # type: ignore[attr-defined]
        args: tuple[Any, ...] = getattr(info.annotation, "__args__", ())
        if len(args) == 2 and args[0] is str:
            tables[name] = args[1]
    return tables


def tau2_tools(probe: Any) -> list[Tau2Tool]:
    """castbench's tools for the tools of a τ² toolkit instance (`probe`, built without a
    database): τ²'s own schema, write type and method, run on the trial's database when called."""
    toolkit_class = type(probe)
    tools: list[Tau2Tool] = []
    for name, tool in probe.get_tools().items():
        info = tool.openai_schema
        function = info["function"]
        kind: Literal["read", "write"] = "write" if probe.tool_type(name).value == "write" else "read"
        tools.append(
            Tau2Tool(
                name=name,
                kind=kind,
                description=function.get("description", ""),
                function=getattr(toolkit_class, name),
                arguments_model=schema_arguments_model(name, function.get("parameters", {})),
                ends_conversation=name.startswith(TRANSFER_PREFIX),
                authenticates=name.startswith(IDENTITY_PREFIX),
                info=info,
            )
        )
    return tools


def tau2_toolkit(toolkit_class: type, db_class: type) -> Tau2Toolkit:
    tools = tau2_tools(toolkit_class(None))
    return Tau2Toolkit(tools, toolkit_class, db_class, _row_models(db_class))
