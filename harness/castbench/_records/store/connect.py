"""Reading `--db`: a URL or a plain file path, and what to tell the user when it cannot be used.

Every problem with the results database (a read-only file or directory, a file that is not a
database, a server that does not answer, a driver that is not installed) becomes one sentence that
names the problem and the fix, instead of a SQLAlchemy traceback.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["db_url", "describe_db_error", "plain_db_errors"]

_DRIVERS = {
    "postgresql": "pip install 'castbench[postgres]'",
    "mysql": "pip install mysqlclient",
}


def db_url(db: str) -> str:
    """`--db` as a SQLAlchemy URL: a plain path (`results/runs.db`) means a SQLite file."""
    return db if "://" in db else f"sqlite:///{db}"


def _shown(url: str) -> str:
    if url.startswith("sqlite"):  # no password to hide (and no SQLAlchemy to load for it)
        return url
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _sqlalchemy_error(exc: BaseException, name: str) -> bool:
    """Whether `exc` is SQLAlchemy's `name` error; False without loading SQLAlchemy when nothing
    loaded it (a SQLite store read with the standard library, #59)."""
    errors = sys.modules.get("sqlalchemy.exc")
    kind = getattr(errors, name, None)
    return kind is not None and isinstance(exc, kind)


def describe_db_error(url: str, exc: BaseException) -> str:
    """One line: which database, what is wrong, what to do."""
    where = f"--db {_shown(url)}"
    text = str(getattr(exc, "orig", None) or exc).splitlines()[0] if str(exc) else type(exc).__name__
    lowered = text.lower()
    sqlite = url.startswith("sqlite")
    if isinstance(exc, ImportError) or _sqlalchemy_error(exc, "NoSuchModuleError"):
        backend = url.split(":", 1)[0].split("+", 1)[0]
        install = _DRIVERS.get(backend, "install the SQLAlchemy driver it names")
        return f"{where}: the database driver is not installed ({text}); {install}, or use a SQLite file path"
    if _sqlalchemy_error(exc, "ArgumentError"):
        return (
            f"{where}: not a database URL ({text}); give a file path or a URL like sqlite:///results/runs.db"
        )
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
    return f"{where}: cannot reach the database server ({text}); start it or fix the URL"


@contextmanager
def plain_db_errors(url: str, error: type[Exception]) -> Iterator[None]:
    """Re-raise database, driver and file-system errors as `error(describe_db_error(...))`."""
    try:
        yield
    except (sqlite3.Error, ImportError, OSError) as exc:
        raise error(describe_db_error(url, exc)) from exc
    except Exception as exc:
        if not _sqlalchemy_error(exc, "SQLAlchemyError"):
            raise
        raise error(describe_db_error(url, exc)) from exc
