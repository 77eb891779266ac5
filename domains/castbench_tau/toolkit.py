"""τ's tool classes as a castbench `Toolkit`: same schemas, same outputs, castbench sandboxes.

A model sees exactly what τ shows it: each tool's schema is τ's own `get_info()`, and a call runs
τ's own `invoke(data=..., **arguments)` with the arguments as given (no coercion), so a wrong
argument fails as it fails under τ (`Error: <exception>`), and an unknown tool answers
`Unknown action <name>` as τ's env does. Only the `data` is castbench's: a copy-on-write view
of the trial's `Database` (see `castbench_tau.cow`).

τ does not say which tools change data. castbench needs it (confirmations, the labeler, the
`writes` critic scope); it is derived from τ's naming: look-ups are `get_*`, `find_*`, `list_*`,
`search_*`, `check_*`, plus `calculate`, `think` and the transfer tools; every other tool may
write (telecom's `manage_*` tools, which also list, count as writes).

Which answers are failures is castbench's to say (τ's reward never asks): an answer that starts
with `Error` (τ-Bench's tools, τ-Trait's telecom), or one of the sentences τ-Trait's telehealth
tools answer instead when the call names nothing real or is refused (their docstrings call them
"error message if not found"): `... with ID X not found.`, `No patient found with ...`, `Cannot
reschedule appointment ...`, `Provider X is not available at ...` (see `_PROSE_FAILURE`). An
empty answer to a valid question (`No appointments found for patient X.`) is not a failure. The
flag decides what the labeler and the rules critic count as an authentication and as revealed,
and which gold writes are broken; the text the agent reads is τ's either way.

τ's tools read the wall clock (telehealth's `cancel_appointment` stamps the day with
`datetime.now()`), so a trial's output and state would depend on the day it ran, and a stored run
would stop verifying at midnight. During a call they read the trial's frozen clock instead
(`Database.now`), as castbench's own tools do: see `_TrialClock`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any

from castbench.domain import Database, Observation, Tool, Toolkit, schema_arguments_model
from castbench_tau.cow import TauData

__all__ = ["TauTool", "TauToolkit", "frozen_clock", "is_failure", "tau_toolkit"]

_READ_PREFIXES = ("get_", "find_", "list_", "search_", "check_", "transfer_")
_READ_NAMES = frozenset({"calculate", "think"})
_IDENTITY_PREFIX = "find_"
"""τ's identity look-ups (`find_user_id_by_email`, `find_patient_by_name_dob`): the tools marked
`authenticates`, which is what the derived rules read."""


_PROSE_FAILURE = re.compile(
    r"Error\b"
    r"|[\w ]+ with ID \S+ not found\.$"
    r"|No (patient|medical record|supplier information) found (with|for) "
    r"|Cannot (cancel|reschedule) appointment "
    r"|Appointment \S+ is already cancelled\.$"
    r"|Provider \S+ (does not work on|is not available at|already has an appointment) "
    r"|Invalid date format: "
    r"|Please provide a record_id or appointment_id"
)
"""The start of an answer that says the call failed (see the module docstring)."""


def is_failure(content: str) -> bool:
    return _PROSE_FAILURE.match(content) is not None


_now: ContextVar[datetime | None] = ContextVar("tau_trial_clock", default=None)


class _TrialClock(datetime):
    """`datetime` for τ's tool modules: `now()` is the calling trial's frozen clock while a tool
    runs (naive, in UTC, where τ asks for local time), the real one otherwise."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]  # a plain datetime, as τ's code expects
        frozen = _now.get()
        if frozen is None:
            return datetime.now(tz)
        return frozen.astimezone(tz) if tz is not None else frozen.astimezone(UTC).replace(tzinfo=None)

    @classmethod
    def today(cls) -> datetime:  # type: ignore[override]  # a plain datetime, as τ's code expects
        return cls.now()

    @classmethod
    def utcnow(cls) -> datetime:  # type: ignore[override]  # a plain datetime, as τ's code expects
        return cls.now(UTC).replace(tzinfo=None)


def _read_trial_clock(tool_class: Any) -> None:
    """Bind `_TrialClock` where the tool's module bound `datetime` (`from datetime import datetime`)."""
    module = sys.modules.get(tool_class.__module__)
    if module is not None and getattr(module, "datetime", None) is datetime:
        module.datetime = _TrialClock  # type: ignore[attr-defined]  # τ's module, bound at run time


@contextmanager
def frozen_clock(now: datetime) -> Iterator[None]:
    """τ's tools read `now` as the time in this block (in this thread or greenlet only)."""
    token = _now.set(now)
    try:
        yield
    finally:
        _now.reset(token)


@dataclass(frozen=True)
class TauTool(Tool):
    """A τ tool: its schema is τ's `get_info()` verbatim."""

    info: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", self.info)


def _is_read(name: str) -> bool:
    return name in _READ_NAMES or name.startswith(_READ_PREFIXES)


class TauToolkit(Toolkit):
    """Runs τ's `invoke` on a `TauData` view of the sandbox, then writes back the rows it changed.

    A look-up's answer (a tool τ's naming marks as a read) is shared between the sandboxes of one
    pristine state whose tables it read are unchanged (`Database.read_through`), as castbench's
    own tools' are: the trials of a task, a replay and the labeler's twins ask τ the same
    look-ups (`find_user_id_by_name_zip` scans every user), and the answer is what the call would
    have given in each of them. A look-up that wrote after all (τ does not say which tools write)
    is never shared: the tables it wrote count as read, and changed."""

    def __init__(self, tools: list[TauTool], classes: Mapping[str, Any]) -> None:
        super().__init__(tools)
        self._classes = dict(classes)

    def call(self, db: Database, name: str, arguments: Mapping[str, Any] | str) -> Observation:
        if name not in self._classes:
            return Observation(f"Unknown action {name}", error=True)
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:  # not JSON, or an integer of thousands of digits
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                return Observation(f"Error: arguments for {name} are not valid JSON ({reason})", error=True)
        if not isinstance(arguments, Mapping):
            return Observation(f"Error: arguments for {name} must be a JSON object", error=True)
        tables = tuple(db.pristine)  # out of any remembered computation: names, not reads
        if self[name].kind == "write":
            return self._invoke(db, tables, name, arguments)
        try:
            key = ("tau", name, json.dumps(arguments, sort_keys=True))
        except (TypeError, ValueError):  # arguments JSON cannot hold (an in-process agent's)
            return self._invoke(db, tables, name, arguments)
        return db.read_through(
            key, lambda: self._invoke(db, tables, name, arguments), lambda answer: len(answer.content)
        )

    def _invoke(
        self, db: Database, tables: tuple[str, ...], name: str, arguments: Mapping[str, Any]
    ) -> Observation:
        """τ's `invoke` on a `TauData` view of the sandbox; what it changed is written back."""
        data = TauData(db, tables)
        try:
            with frozen_clock(db.now):
                result = self._classes[name].invoke(data=data, **arguments)
        except Exception as exc:  # τ's env answers any exception this way; it is the agent's error
            result = f"Error: {exc}"
        finally:
            with db.transaction():
                data.commit()
        content = result if isinstance(result, str) else str(result)
        return Observation(content, error=is_failure(content), ends_conversation=self[name].ends_conversation)


def tau_toolkit(classes: tuple[Any, ...], terminate: tuple[str, ...]) -> TauToolkit:
    tools: list[TauTool] = []
    by_name: dict[str, Any] = {}
    for cls in classes:
        _read_trial_clock(cls)
        info = cls.get_info()
        function = info["function"]
        name = function["name"]
        by_name[name] = cls
        tools.append(
            TauTool(
                name=name,
                kind="read" if _is_read(name) else "write",
                description=function.get("description", ""),
                function=cls.invoke,
                arguments_model=schema_arguments_model(name, function.get("parameters", {})),
                ends_conversation=name in terminate,
                authenticates=name.startswith(_IDENTITY_PREFIX),
                info=info,
            )
        )
    return TauToolkit(tools, by_name)
