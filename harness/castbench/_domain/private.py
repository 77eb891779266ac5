"""Private task splits: test tasks nobody has seen, drawn from a domain's own families by
`castbench tasks generate` (`castbench._authoring.private`) from a seed whoever publishes a board
keeps to themselves.

A split is one file, named by the digest of its tasks: the digest (never the seed) names the
split (`private-<digest>`), so it is part of a run's identity and of what runs are comparable
on, and a board can name the one split it accepts. The digest covers every task with its id and
split left out (those are derived from the digest: `<domain>-private-<digest>-0001`), so an
edited task is a different split, and a file whose tasks do not hash to its name is refused.

A process that runs or reads a private split registers its file (`use_tasks_file`); the path
also goes into `CASTBENCH_TASKS_FILES` (paths joined by the OS path separator), so the worker
processes and Ray jobs castbench starts, and later commands given the same variable, find the
split's tasks by name like any split of the domain (`Domain.tasks`).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from castbench._domain.task import Task, TaskFileError, tasks_from

__all__ = [
    "PRIVATE_PREFIX",
    "TASKS_FILES_ENV",
    "PrivateSplit",
    "digest_tasks",
    "private_tasks",
    "read_split",
    "split_name",
    "use_tasks_file",
]

PRIVATE_PREFIX = "private-"
TASKS_FILES_ENV = "CASTBENCH_TASKS_FILES"
FORMAT = "castbench-private-split/1"
DIGEST_CHARS = 16
"""Hex digits of the digest in the split's name and its task ids (64 bits: no two splits meet)."""

_registered: dict[tuple[str, str], list[Task]] = {}
_read_paths: set[str] = set()
_lock = threading.Lock()


class PrivateSplit(BaseModel):
    """A private split's file: its domain, what it was drawn as, and its tasks (never its seed)."""

    format: str = FORMAT
    domain: str
    domain_version: str
    digest: str
    """sha256 of the tasks with ids and split left out (`digest_tasks`)."""
    families: dict[str, int]
    """Family -> tasks drawn: the test split's mix, scaled to the count asked for."""
    tasks: list[Task]

    @property
    def split(self) -> str:
        return split_name(self.digest)


def split_name(digest: str) -> str:
    return PRIVATE_PREFIX + digest[:DIGEST_CHARS]


def digest_tasks(tasks: Sequence[Task]) -> str:
    """The split's digest: its tasks in order, each without its id and split."""
    body = [task.model_dump(mode="json", exclude={"id", "split"}) for task in tasks]
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _problem(split: PrivateSplit) -> str | None:
    if split.format != FORMAT:
        return f"format '{split.format}' is not {FORMAT}"
    if digest_tasks(split.tasks) != split.digest:
        return "its tasks do not hash to its digest (edited after it was generated?)"
    for number, task in enumerate(split.tasks, start=1):
        wanted = f"{split.domain}-{split.split}-{number:04d}"
        if task.id != wanted or task.split != split.split:
            return f"task {task.id} (split {task.split}) should be {wanted} of split {split.split}"
    return None


def read_split(path: Path) -> PrivateSplit:
    """The private split in `path`; `TaskFileError` naming the file and what is wrong."""
    try:
        raw: Any = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TaskFileError(f"{path}: cannot read the tasks file: {exc}") from exc
    if not isinstance(raw, dict) or "tasks" not in raw:
        raise TaskFileError(f"{path}: not a private split (written by `castbench tasks generate`)")
    tasks = tasks_from(raw["tasks"], str(path))
    try:
        split = PrivateSplit.model_validate({**raw, "tasks": tasks})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise TaskFileError(f"{path}: field '{where}': {first['msg']}") from exc
    problem = _problem(split)
    if problem is not None:
        raise TaskFileError(f"{path}: {problem}")
    return split


def use_tasks_file(path: Path) -> PrivateSplit:
    """Read and register the split in `path`, and pass its path on to the processes castbench
    starts (`CASTBENCH_TASKS_FILES`)."""
    split = read_split(path)
    with _lock:
        _registered[split.domain, split.split] = split.tasks
        _read_paths.add(str(path.resolve()))
        known = [item for item in os.environ.get(TASKS_FILES_ENV, "").split(os.pathsep) if item]
        if str(path.resolve()) not in known:
            os.environ[TASKS_FILES_ENV] = os.pathsep.join([*known, str(path.resolve())])
    return split


def _read_environment() -> None:
    for item in os.environ.get(TASKS_FILES_ENV, "").split(os.pathsep):
        if item and item not in _read_paths:
            split = read_split(Path(item))
            with _lock:
                _registered[split.domain, split.split] = split.tasks
                _read_paths.add(item)


def private_tasks(domain: str) -> dict[str, list[Task]]:
    """The registered private splits of `domain`: split name -> tasks."""
    _read_environment()
    with _lock:
        return {split: tasks for (name, split), tasks in _registered.items() if name == domain}
