"""A tiny in-test domain: two counters, tickets with generated ids, and tools that misbehave on
purpose (a write that fails half-way, a crash). Built into a temporary directory so each test can
shape its own task file, then registered with `castbench.domain.register_domain`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest

from castbench.domain import Database, Domain, Record, ToolError, Toolkit, read_tool, write_tool
from castbench.domain import registry as domain_registry

__all__ = ["Counter", "Ticket", "build_toy_domain", "register_toy", "toy_task", "TOY_STATE"]

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class Counter(Record):
    table: ClassVar[str] = "counters"
    key_field: ClassVar[str] = "name"

    name: str
    value: int
    mode: Literal["a", "b"] = "a"
    note: str = ""
    tags: list[str] = []


class Ticket(Record):
    table: ClassVar[str] = "tickets"
    key_field: ClassVar[str] = "ticket_id"

    ticket_id: str
    title: str


TOY_STATE: dict[str, Any] = {
    "counters": {
        "x": {"name": "x", "value": 5, "mode": "a", "note": "Hello World", "tags": ["red"]},
        "y": {"name": "y", "value": 10, "mode": "a", "note": "", "tags": []},
    },
    "_sequences": {"ticket": {"next": 1, "prefix": "T-", "width": 4}},
}


@read_tool
def get_counter(db: Database, name: str) -> Counter:
    """Look up one counter.

    Args:
        name: The counter's name.
    """
    return db.get(Counter, name)


@write_tool
def add(db: Database, name: str, amount: int) -> Counter:
    """Add an amount to a counter.

    A counter never goes below zero.

    Args:
        name: The counter's name.
        amount: How much to add; negative to subtract.
    """
    counter = db.get(Counter, name)
    counter.value += amount
    if counter.value < 0:
        raise ToolError("a counter cannot go below zero")
    db.put(counter)
    return counter


@write_tool
def set_value(db: Database, name: str, value: int) -> Counter:
    """Set a counter to a value.

    Args:
        name: The counter's name.
        value: The new value.
    """
    counter = db.get(Counter, name)
    counter.value = value
    db.put(counter)
    return counter


@write_tool
def configure(db: Database, name: str, mode: Literal["a", "b"], tags: list[str], note: str = "") -> Counter:
    """Set a counter's mode, tags and note.

    Args:
        name: The counter's name.
        mode: Which mode the counter runs in.
        tags: Labels to attach.
        note: A free-text note.
    """
    counter = db.get(Counter, name)
    counter.mode, counter.tags, counter.note = mode, tags, note
    db.put(counter)
    return counter


@write_tool
def transfer(db: Database, source: str, target: str, amount: int) -> str:
    """Move an amount from one counter to another.

    Args:
        source: The counter to take from.
        target: The counter to add to.
        amount: How much to move.
    """
    receiving = db.get(Counter, target)
    receiving.value += amount
    db.put(receiving)  # written first on purpose: a failure below must undo it
    giving = db.get(Counter, source)
    if giving.value < amount:
        raise ToolError(f"counter {source} has only {giving.value}")
    giving.value -= amount
    db.put(giving)
    return "ok"


@write_tool
def open_ticket(db: Database, title: str) -> Ticket:
    """Open a ticket with a new id.

    Args:
        title: What the ticket is about.
    """
    ticket = Ticket(ticket_id=db.new_id("ticket"), title=title)
    db.insert(ticket)
    if title == "reject":
        raise ToolError("tickets titled 'reject' are refused")
    return ticket


@write_tool
def crash(db: Database, name: str) -> str:
    """A tool with a bug: it writes, then fails with an unexpected exception.

    Args:
        name: The counter's name.
    """
    counter = db.get(Counter, name)
    counter.value += 1
    db.put(counter)
    return str(1 // (counter.value - counter.value))


TOOLS = [get_counter, add, set_value, configure, transfer, open_ticket, crash]


def toy_task(
    task_id: str,
    actions: list[dict[str, Any]],
    *,
    outcome: str = "change",
    request: str = "Hi, please update my counter.",
    facts: list[dict[str, Any]] | None = None,
    split: str = "test",
    ordered: bool = False,
    required_outputs: list[str] | None = None,
    grading: dict[str, Any] | None = None,
    earned: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": task_id,
        "split": split,
        "family": "toy",
        "outcome": outcome,
        "scenario": {
            "request": request,
            "facts": facts or [],
            "confirm": True,
            "persona": "",
            "instructions": f"You are a toy user. Your goal: task {task_id}.",
        },
        "actions": actions,
        "required_outputs": required_outputs or [],
        "grading": grading or {"normalize_text": [], "ignore_fields": []},
        "ordered": ordered,
        **({"earned": earned} if earned is not None else {}),
    }


def build_toy_domain(
    root: Path,
    tasks: list[dict[str, Any]] | None = None,
    *,
    name: str = "toy",
    splits: dict[str, list[dict[str, Any]]] | None = None,
    state: dict[str, Any] | None = None,
) -> Domain:
    """Write the domain's files under `root` and return the (unregistered) domain."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "tasks").mkdir(exist_ok=True)
    (root / "data" / "state.json").write_text(json.dumps(state if state is not None else TOY_STATE))
    (root / "policy.md").write_text("# Toy policy\nConfirm every write with the user.\n")
    if splits is None:
        splits = {"test": tasks if tasks is not None else [toy_task("toy-1", [add_call("x", 1)])]}
    for split, items in splits.items():
        (root / "tasks" / f"{split}.json").write_text(json.dumps(items, indent=1))
    return Domain(
        name=name,
        version="1-0",
        root=root,
        records=[Counter, Ticket],
        toolkit=Toolkit(TOOLS),
        now=NOW,
        description="toy counters",
    )


def add_call(name: str, amount: int) -> dict[str, Any]:
    return {"name": "add", "arguments": {"name": name, "amount": amount}}


def register_toy(monkeypatch: pytest.MonkeyPatch, domain: Domain) -> Domain:
    """Register `domain` for this test only (the registry is process-wide)."""
    monkeypatch.setitem(domain_registry._registered, domain.name, domain)
    return domain
