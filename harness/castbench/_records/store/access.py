"""Whether a SQLite results file can be written, and opening it for a command that only reads.

A results folder the user cannot write (a colleague's results, a read-only mount, an archive
unpacked as another user) must still answer `runs list`, `runs show`, `compare`, `export`,
`view` and `gate`: those open the file read-only, write nothing (no schema update, no cached
figure, no lock file, no `-wal`/`-shm` beside it when its folder is read-only), and a command that
writes is refused in one line before any work. Read-only is judged by the mode bits as well as by
`os.access`: root may write anything, but a file or folder marked read-only was marked so on
purpose (and that is the only way a test running as root can show the read-only path).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SqliteFile", "read_only_connect", "readable_schema_problem", "sqlite_file"]

_WRITE_BITS = 0o222


def _writable(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return bool(mode & _WRITE_BITS) and os.access(path, os.W_OK)


def _existing_folder(path: Path) -> Path:
    """The folder a new file at `path` would be created in, or its nearest existing ancestor
    (the one its missing folders would be made in)."""
    folder = path.absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


@dataclass(frozen=True)
class SqliteFile:
    """The file behind a `sqlite:///PATH[?query]` URL."""

    path: Path
    query: str

    @property
    def asks_read_only(self) -> bool:
        """The URL itself opens the file read-only (`?mode=ro` or `?immutable=1`)."""
        options = set(self.query.split("&"))
        return "mode=ro" in options or "immutable=1" in options

    def missing(self) -> str | None:
        """Why a reader finds no database here (it never creates one), or None."""
        if self.path.exists():
            return None
        folder = _existing_folder(self.path)
        if not folder.is_dir():
            return f"cannot open or create the database file: its folder {folder} is a file"
        return "no results database there yet; `castbench eval` stores runs in it"

    def write_problem(self) -> str | None:
        """Why nothing can be written here (the file, or the folder its journal goes in), or None."""
        if self.asks_read_only:
            return "the URL opens it read-only"
        if self.path.exists() and not _writable(self.path):
            return "the database file is read-only"
        folder = _existing_folder(self.path)
        if folder.is_dir() and not _writable(folder):
            return f"its folder {folder} is read-only"
        return None


def sqlite_file(url: str) -> SqliteFile | None:
    """The file of a SQLite URL; None for another backend or an in-memory database."""
    if not url.startswith("sqlite:///"):
        return None
    path, _, query = url.removeprefix("sqlite:///").partition("?")
    path = path.removeprefix("file:")
    if path in ("", ":memory:"):
        return None
    return SqliteFile(Path(path), query)


def read_only_connect(file: SqliteFile) -> Callable[[], sqlite3.Connection]:
    """How to open `file` only to read it. With its folder writable (or a `-shm` already there)
    it opens `?mode=ro`, which sees what a live writer has in its write-ahead log; otherwise
    `?immutable=1`, which creates nothing beside the file and reads its last checkpoint (all of it
    once the writer has closed). `query_only` refuses any write that would slip through."""
    shm = file.path.with_name(file.path.name + "-shm")
    mode = "mode=ro" if _writable(_existing_folder(file.path)) or shm.exists() else "immutable=1"
    uri = f"{file.path.absolute().as_uri()}?{mode}"

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA query_only=ON")
        return connection

    return connect


_READ_TABLES = {"run": {"updated"}, "trial": set(), "run_lease": set()}
"""What reading needs: the tables and the columns added since the first schema."""


def readable_schema_problem(connection: sqlite3.Connection) -> str | None:
    """Why a store opened read-only cannot be read (no castbench tables, or an older schema that
    only a writable open brings up to date), or None."""
    tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "run" not in tables:
        return (
            "holds no castbench runs (it is read-only, so nothing was created); "
            "run `castbench eval` with a writable --db"
        )
    for table, columns in _READ_TABLES.items():
        have = {name for (name,) in connection.execute("SELECT name FROM pragma_table_info(?)", (table,))}
        if table not in tables or not columns <= have:
            return (
                "was written by an older castbench and is read-only, so its schema cannot be brought "
                "up to date; open it once where it can be written (or copy it to a writable folder)"
            )
    return None
