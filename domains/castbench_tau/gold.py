"""Why a published τ gold cannot be used, by what happened when it was replayed in τ's own tools.

Each finding has a class, because they are different failures with different fixes:

- `unknown tool`: the gold calls a tool τ's env does not have; τ answers `Unknown action` and
  its replay goes on without it, so the expected state lacks what that call was meant to do;
- `fails in τ`: a gold write that τ's own tool answers with an error (an order that is not
  found, a balance too low, an argument τ's code does not take); the expected state lacks it.
  Not a finding when a later gold write of the same tool succeeds: the task scripts a fallback
  ("PayPal is preferred, otherwise credit card"; telehealth's "attempt each option in order,
  even if you think it will be unavailable"), which an agent that follows it makes too;
- `changes nothing`: the gold writes, but replaying it leaves the state as it was (its writes
  all failed), so doing nothing passes;
- `outside the schema`: a gold write whose arguments τ's published schema rejects (a value
  outside an enum, a boolean where a string is declared) but τ's code accepts and stores as
  given. The replay works, in τ and in castbench (neither checks a call against the schema),
  yet the expected state holds the out-of-schema value, so only an agent that calls outside the
  schema it was given can reach it;
- `castbench check`: anything else castbench's own task checks (`validate_task`) report.

Every class is excluded from scores (the task goes to `<split>-broken`): in each, the expected
state is one a policy that follows τ's tools and schemas cannot reach, or one it reaches by doing
nothing. A gold *read* that fails (retail's original tasks look up item ids as product ids) or a
read outside the schema leaves the expected state as meant and is not a finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from castbench.domain import Domain, Task, ToolError, state_diff, validate_task

__all__ = ["BROKEN_CLASSES", "BrokenClass", "GoldFinding", "gold_findings"]

BrokenClass = Literal[
    "unknown tool", "fails in τ", "changes nothing", "outside the schema", "castbench check"
]
BROKEN_CLASSES: tuple[BrokenClass, ...] = (
    "unknown tool",
    "fails in τ",
    "changes nothing",
    "outside the schema",
    "castbench check",
)
_REPORTED_HERE = re.compile(
    r"action \d+: Error: (unknown tool|invalid arguments)"
    r"|outcome is 'change' but replaying its actions changes nothing"
)
"""`validate_task` findings that `gold_findings` reports itself, with what happened in τ."""


@dataclass(frozen=True)
class GoldFinding:
    kind: BrokenClass
    text: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.text}"


def _leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    yield value


def _same(a: Any, b: Any) -> bool:
    """Equal with the same JSON type (True is not "true", nor 1)."""
    return type(a) is type(b) and a == b


def _deviations(domain: Domain, name: str, arguments: Mapping[str, Any]) -> tuple[str, list[str]]:
    """What the schema says is wrong with the arguments, and which arguments it names."""
    try:
        domain.toolkit.validate(name, arguments)
    except ToolError as exc:
        message = re.sub(r"^Error: invalid arguments for \w+: ", "", str(exc))
        try:
            domain.toolkit[name].arguments_model.model_validate(dict(arguments))
        except ValidationError as error:
            names = sorted({str(item["loc"][0]) for item in error.errors() if item["loc"]})
            return message, names
        return message, []
    return "", []


def gold_findings(domain: Domain, task: Task, terminate_tools: Iterable[str] = ()) -> list[GoldFinding]:
    """Replay the gold in order on the pristine state (transfers skipped, as τ's reward does) and
    say what went wrong, by class (empty: the gold is usable)."""
    toolkit, skipped = domain.toolkit, set(terminate_tools)
    findings: list[GoldFinding] = []
    failed: list[tuple[str, GoldFinding]] = []
    """Failing writes, with their tool: findings unless a later write of the tool succeeds."""
    db = domain.fresh_database()
    for position, call in enumerate(task.actions):
        where = f"action {position} {call.name}"
        if call.name not in toolkit:
            findings.append(
                GoldFinding("unknown tool", f"{where}: τ has no such tool (its env answers 'Unknown action')")
            )
            continue
        if call.name in skipped:
            continue
        if not toolkit.is_write(call.name):
            toolkit.call(db, call.name, call.arguments)
            continue
        message, names = _deviations(domain, call.name, call.arguments)
        before = db.fork()
        observation = toolkit.call(db, call.name, call.arguments)
        if observation.error:
            also = f" (its arguments are also outside the schema: {message})" if message else ""
            finding = GoldFinding("fails in τ", f"{where} answers {observation.content!r}{also}")
            failed.append((call.name, finding))
            findings.append(finding)
            continue
        for tool, finding in failed:  # a fallback went through: what failed before it was a try
            if tool == call.name and finding in findings:
                findings.remove(finding)
        if message:
            changed = [
                db.row(table, key)
                for table, keys in db.touched().items()
                for key in keys
                if db.row(table, key) != before.row(table, key)
            ]
            stored = [
                f"{name}={call.arguments[name]!r}"
                for name in names
                if name in call.arguments
                and any(_same(call.arguments[name], leaf) for row in changed for leaf in _leaves(row))
            ]
            if stored:
                findings.append(
                    GoldFinding(
                        "outside the schema",
                        f"{where}: {message}; τ's tool accepts the call and stores "
                        f"{', '.join(stored)}, so the expected state needs a call "
                        "outside the schema the agent is given",
                    )
                )
    if task.outcome == "change" and not state_diff(db, domain.fresh_database()):
        findings.append(GoldFinding("changes nothing", "replaying its gold writes changes nothing"))
    prefix = f"{domain.name} task {task.id}: "
    for problem in validate_task(domain, task):
        problem = problem.removeprefix(prefix)
        if not _REPORTED_HERE.match(problem):
            findings.append(GoldFinding("castbench check", problem))
    return findings
