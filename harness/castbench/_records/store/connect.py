"""Reading `--db`: a URL or a plain file path, and what to tell the user when it cannot be used.

Every problem with the results database (a read-only file or directory, a file that is not a
database, a server that does not answer, a driver that is not installed) becomes one sentence that
names the problem and the fix, instead of a driver's traceback.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import unquote, urlsplit

__all__ = [
    "db_url",
    "describe_db_error",
    "in_memory_url",
    "plain_db_errors",
    "postgres_url",
    "server_location",
]

_POSTGRES = re.compile(r"^postgres(?:ql)?(?:\+\w+)?://")


def db_url(db: str) -> str:
    """`--db` as a URL: a plain path (`results/runs.db`) means a SQLite file."""
    return db if "://" in db else f"sqlite:///{db}"


def postgres_url(url: str) -> str | None:
    """The libpq URL of a Postgres store (`postgresql://`, `postgres://`, `postgresql+psycopg://`),
    or None for another backend."""
    match = _POSTGRES.match(url)
    return None if match is None else "postgresql://" + url[match.end() :]


def in_memory_url(url: str) -> bool:
    """A SQLite database that lives in this process's memory (`sqlite://`, `sqlite:///:memory:`)."""
    if not url.startswith("sqlite"):
        return False
    rest = url.split("://", 1)[1].split("?", 1)[0]
    return rest in ("", "/", "/:memory:") or "mode=memory" in url


def server_location(url: str) -> str:
    """A server store's identity without its password, `BACKEND://USER@HOST:PORT/DATABASE` (as
    SQLAlchemy's URL spelled it: the digests kept under it before still apply)."""
    parts = urlsplit(url)
    try:
        port: int | str = parts.port or ""
    except ValueError:
        port = ""
    backend = parts.scheme.split("+", 1)[0]
    user = unquote(parts.username or "")
    return f"{backend}://{user}@{parts.hostname or ''}:{port}/{unquote(parts.path.removeprefix('/'))}"


def _shown(url: str) -> str:
    """The URL without its password."""
    return re.sub(r"^(\w[\w+.-]*://[^:/@]*:)[^@/]*@", r"\1***@", url)


def describe_db_error(url: str, exc: BaseException) -> str:
    """One line: which database, what is wrong, what to do."""
    where = f"--db {_shown(url)}"
    text = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
    lowered = text.lower()
    sqlite = url.startswith("sqlite")
    if isinstance(exc, ImportError):
        install = (
            "pip install 'castbench[postgres]'"
            if postgres_url(url)
            else "castbench stores runs in SQLite (a file path) or PostgreSQL (postgresql://...)"
        )
        return f"{where}: the database driver is not installed ({text}); {install}, or use a SQLite file path"
    if "malformed" in lowered or "disk image" in lowered:
        file = url.removeprefix("sqlite:///").split("?", 1)[0] if sqlite else "FILE"
        return (
            f"{where}: the database file is damaged ({text}); restore it from a copy, or save what "
            f"still reads with `sqlite3 {file} .recover | sqlite3 recovered.db`"
        )
    if "not a database" in lowered or "encrypted" in lowered:
        return f"{where}: the file is not a SQLite database; point --db at a results database or a new file"
    if "readonly" in lowered or "read-only" in lowered or isinstance(exc, PermissionError):
        return f"{where}: the database or its directory is read-only ({text}); use a writable location"
    if sqlite:
        return f"{where}: cannot open or create the database file ({text}); check that its folder is writable"
    return f"{where}: cannot reach the database server ({_shown(text)}); start it or fix the URL"


@contextmanager
def plain_db_errors(url: str, error: type[Exception]) -> Iterator[None]:
    """Re-raise database, driver and file-system errors as `error(describe_db_error(...))`."""
    try:
        yield
    except (sqlite3.Error, ImportError, OSError) as exc:
        raise error(describe_db_error(url, exc)) from exc
    except Exception as exc:
        psycopg = sys.modules.get("psycopg")  # loaded by a Postgres store only
        if psycopg is None or not isinstance(exc, psycopg.Error):
            raise
        raise error(describe_db_error(url, exc)) from exc
