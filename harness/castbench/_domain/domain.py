"""A domain: typed state, pristine seed data, tools, a policy document and tasks, versioned.

A domain is a self-contained package (`domains/castbench_<name>/`) exposing one `Domain` object
and registered under the `castbench.domains` entry-point group. Its files:

    data/state.json      table -> key -> row (validated against the record models on load)
    policy.md            the policy document the agent reads
    tasks/<split>.json   generated tasks (see `castbench._domain.task`)

The version is `N-X`: N goes up whenever scores stop being comparable (tasks, data, tools or
policy changed), X for changes that leave scores comparable (wording, docs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from castbench._base.conversation import Event
from castbench._domain.database import SEQUENCES_TABLE, Database, PristineIndex, Record, Row, Snapshot
from castbench._domain.private import PRIVATE_PREFIX, TASKS_FILES_ENV, private_tasks
from castbench._domain.rules import DomainRules
from castbench._domain.task import Task, TaskFileError, load_tasks
from castbench._domain.tools import ToolCrash, Toolkit

__all__ = ["Domain", "DomainDataError", "ExpectedStateError", "TaskChecks"]

_VERSION = re.compile(r"^(\d+)-(\d+)$")


class DomainDataError(ValueError):
    """Seed data that does not match the domain's schema; names the file, table, key and field."""


class TaskChecks(BaseModel):
    """What a pack's own checks of a trial found (`Domain.task_checks`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state_graded: bool = True
    """False: the final state need not equal the expected state (the pack's checks judge it)."""
    failed: list[str] = Field(default_factory=list)
    """One line per check the trial failed; empty: passed."""


class ExpectedStateError(RuntimeError):
    """A task's ground truth does not replay cleanly: the task is broken, not the agent."""


@dataclass(eq=False)
class Domain:
    name: str
    version: str
    root: Path
    records: Sequence[type[Record]]
    toolkit: Toolkit
    now: datetime
    """The frozen clock every tool of every trial reads."""
    description: str = ""
    rules: DomainRules = field(default_factory=DomainRules)
    """Executable policy rules, used by the rules critic and the labeler."""
    user_toolkit: Toolkit | None = None
    """Tools the simulated *user* performs on their own side (a phone's settings, say)."""
    verbatim_policy: bool = False
    """A model policy's system prompt is the policy document alone, nothing added (a published
    benchmark's prompt, kept so that scores compare with its own harness's)."""
    requires_earned: bool = True
    """Every `refuse` / `no_change` task must say how it is earned (`Task.earned`). A published
    pack whose tasks castbench does not author sets False: a task of its with nothing to look
    up keeps its own benchmark's rule instead of being dropped as broken."""
    default_limits: dict[str, int] = field(default_factory=dict)
    """A published benchmark's own trial limits (fields of `castbench._records.config.Limits`:
    τ²'s packs set `max_messages` and `max_tool_errors`), a run's limits when its options give
    none (`--max-steps` replaces them); empty: castbench's."""
    _tasks: dict[str, list[Task]] = field(default_factory=dict, init=False, repr=False)
    _by_id: dict[str, Task] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not _VERSION.match(self.version):
            raise ValueError(f"domain {self.name}: version '{self.version}' is not of the form N-X")

    @property
    def data_origin(self) -> str | None:
        """Where the pack read its data from when it is not its own (another data directory,
        with a digest of its files): recorded in the run's config (`extra["data"]`)."""
        return None

    @property
    def comparability(self) -> int:
        """Scores of two versions are comparable iff this number is the same."""
        return int(self.version.split("-")[0])

    @cached_property
    def policy(self) -> str:
        return (self.root / "policy.md").read_text()

    @cached_property
    def pristine(self) -> Snapshot:
        path = self.root / "data" / "state.json"
        try:
            raw: dict[str, dict[str, Row]] = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise DomainDataError(f"{path}: cannot read seed state: {exc}") from exc
        models = {model.table: model for model in self.records}
        snapshot: dict[str, dict[str, Row]] = {}
        for table, rows in raw.items():
            if table == SEQUENCES_TABLE:
                snapshot[table] = rows
                continue
            model = models.get(table)
            if model is None:
                raise DomainDataError(f"{path}: table '{table}' has no record model in domain {self.name}")
            checked: dict[str, Row] = {}
            for key, row in rows.items():
                try:
                    record = model.model_validate(row)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first["loc"])
                    raise DomainDataError(
                        f"{path}: {table} '{key}': field '{where}': {first['msg']}"
                    ) from exc
                if record.key != key:
                    raise DomainDataError(f"{path}: {table} '{key}': key field says '{record.key}'")
                checked[key] = record.model_dump(mode="json")
            snapshot[table] = checked
        return snapshot

    def with_state(self, snapshot: Snapshot) -> Domain:
        """A copy of this domain whose pristine state is `snapshot` instead of data/state.json.

        For a generator, which must replay its tasks against the state it has just built, before
        anything is written. The snapshot is used as given (not validated against the record
        models), and the copy starts with no tasks loaded.
        """
        copy = replace(self)
        copy.__dict__["pristine"] = snapshot
        return copy

    @property
    def splits(self) -> list[str]:
        """The splits under tasks/, then the private splits this process was given
        (`castbench._domain.private`)."""
        own = sorted(path.stem for path in (self.root / "tasks").glob("*.json"))
        return own + sorted(private_tasks(self.name))

    def tasks(self, split: str | None = None) -> list[Task]:
        """Tasks of one split (or all splits), in file order."""
        if split is None:
            return [task for name in self.splits for task in self.tasks(name)]
        if split.startswith(PRIVATE_PREFIX) and split not in self._tasks:
            private = private_tasks(self.name).get(split)
            if private is None:
                raise TaskFileError(
                    f"domain {self.name}: private split '{split}' was not given (--tasks-file FILE, "
                    f"or its path in {TASKS_FILES_ENV})"
                )
            self._tasks[split] = private
        if split not in self._tasks:
            path = self.root / "tasks" / f"{split}.json"
            if not path.exists():
                raise TaskFileError(f"domain {self.name} has no split '{split}' (looked for {path})")
            tasks = [task.with_synonyms(self.rules.reason_synonyms) for task in load_tasks(path)]
            for task in tasks:
                if task.split != split:
                    raise TaskFileError(f"{path}: task {task.id}: field 'split' is '{task.split}'")
            self._tasks[split] = tasks
        return self._tasks[split]

    def excluded_tasks(self, split: str) -> dict[str, list[str]]:
        """Task id -> why, for tasks of the split left out of its scores because their ground
        truth is broken (a task pack that publishes such tasks); castbench's own domains have none."""
        return {}

    def task(self, task_id: str) -> Task:
        """One task by id. The index is read again from the task files only for an id it does not
        hold (a split written since): the attribution looks up every trial's task. Splits are
        indexed one at a time, in order, until one holds the id: a run on the test split then
        never parses and validates the (four times larger) train split to find its own tasks."""
        if task_id not in self._by_id:
            for split in self.splits:
                self._by_id.update((task.id, task) for task in self.tasks(split))
                if task_id in self._by_id:
                    break
        try:
            return self._by_id[task_id]
        except KeyError:
            raise KeyError(f"domain {self.name} has no task '{task_id}'") from None

    def toolkit_for(self, actor: str) -> Toolkit:
        """The agent's tools, or the user's own-side tools (an empty toolkit if it has none)."""
        if actor == "user":
            return self.user_toolkit if self.user_toolkit is not None else Toolkit([])
        return self.toolkit

    @cached_property
    def _index(self) -> PristineIndex:
        return PristineIndex(self.pristine)

    def fresh_database(self) -> Database:
        return Database(self.pristine, self.now, self._index)

    def initial_database(self, task: Task) -> Database:
        """The state a trial of `task` starts from: the pristine state, unless the pack sets up
        each task's own (τ²'s telecom tasks break the user's phone first)."""
        return self.fresh_database()

    def task_checks(self, task: Task, final: Database, conversation: Sequence[Event]) -> TaskChecks:
        """The pack's own checks of a finished trial, beside the harness's (none by default): a
        published benchmark whose reward is not "final state equals the expected state" (τ²'s
        assertions on the final state, its gold actions found in the trajectory) says so here."""
        return TaskChecks()

    def replay(self, task: Task, db: Database | None = None) -> Database:
        """The state after the task's ground-truth actions, replayed through the real tools."""
        db = db if db is not None else self.initial_database(task)
        for position, call in enumerate(task.actions):
            toolkit = self.toolkit_for(call.actor)
            if call.name not in toolkit:
                raise ExpectedStateError(
                    f"domain {self.name}: task {task.id}: action {position}: "
                    f"unknown {call.actor} tool '{call.name}'"
                )
            try:
                observation = toolkit.call(db, call.name, call.arguments)
            except ToolCrash as exc:
                raise ExpectedStateError(
                    f"domain {self.name}: task {task.id}: action {position} {call.name} crashed: {exc}"
                ) from exc
            if observation.error:
                raise ExpectedStateError(
                    f"domain {self.name}: task {task.id}: action {position} "
                    f"{call.name}: {observation.content}"
                )
        return db


DomainFactory = Callable[[], Domain]
