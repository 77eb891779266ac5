"""Checks of command-line input made before any work starts, each failing with one `error:` line.

A run of hours must not end in a traceback because its `--output` folder is read-only: what can be
checked up front is checked here (eval's option values by `castbench._run.options`, e.g. an empty
`--tasks ""` that would otherwise mean every task).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from castbench._cli.errors import fail

__all__ = [
    "check_folder",
    "check_writable",
    "sqlite_run_taken",
    "validation_line",
]


def check_writable(option: str, path: Path) -> None:
    """The file `path` can be written (its folder created if missing): checked before the work
    whose result it is meant to hold, by writing a scratch file beside it."""
    folder = path.parent
    try:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a folder")
        folder.mkdir(parents=True, exist_ok=True)
        if path.exists() and not os.access(path, os.W_OK):
            raise PermissionError(f"{path} is read-only")
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".castbench-check-"):
            pass
    except OSError as exc:
        fail(f"{option} {path}: cannot be written ({exc.strerror or exc}); choose a writable location")


def check_folder(option: str, path: Path) -> None:
    """`path` is a folder castbench can write in (created if missing): checked before the work
    that would fill it, so that a file given where a folder is expected is one `error:` line, not
    a model policy whose every answer fails to be stored."""
    try:
        if path.exists() and not path.is_dir():
            raise NotADirectoryError(f"{path} is a file, not a folder")
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".castbench-check-"):
            pass
    except OSError as exc:
        fail(f"{option} {path}: cannot be used as a folder ({exc.strerror or exc}); give a folder")


def validation_line(exc: Any, options: dict[str, str]) -> str:
    """A pydantic `ValidationError` as one line in the user's words: each problem as the option
    (`options` maps a field to it) with the value given and what is wrong, without pydantic's
    types and links."""
    problems = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error.get("loc") else ""
        message = str(error["msg"]).removeprefix("Value error, ")
        given = error.get("input")
        problems.append(f"{options.get(field, field)} {given!r}: {message}")
    return "; ".join(problems)


_held: dict[Path, Any] = {}
"""Lock file -> its open handle, for the runs this process works on: the locks last as long as
the process (a second eval of the same run in this process is no other process)."""


def sqlite_run_taken(db: str, config_hash: str) -> bool:
    """Whether another process is already working on the run `config_hash` in the SQLite file
    `db` (a lock file beside it, held while a process runs it). SQLite has no leases: two such
    processes would both compute every trial; Postgres splits them. False for other stores."""
    import fcntl

    from castbench._records.store.connect import db_url

    url = db_url(db)
    if not url.startswith("sqlite:///") or ":memory:" in url:
        return False
    path = Path(url.removeprefix("sqlite:///").split("?", 1)[0])
    lock = path.with_name(f".{path.name}.{config_hash[:12]}.lock")
    if lock in _held:
        return False
    try:
        handle = open(lock, "a")  # noqa: SIM115 (held open on purpose: the lock lives as long as the process)
    except OSError:
        return False  # a read-only folder: nothing to warn with, nothing lost
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return True
    _held[lock] = handle
    return False
