"""The store's database through Python's DB-API: `sqlite3` for SQLite, psycopg 3 for Postgres.

Both run the same SQL, written with `:name` parameters; what differs between them (the
parameter style, how a write transaction starts, the column types of the schema, how the
catalogue is read) is one `Dialect`. One connection per thread (a run's commit thread writes
while it reads), in autocommit mode outside `transaction`; a process forked with one opens its
own. An in-memory SQLite database is one connection that every thread shares (each new one
would be an empty database of its own).

The schema is the one castbench has always written (SQLAlchemy wrote it before, and a SQLite
file's `sqlite_master` holds the same statements, `tests/core/store/test_native_sqlite.py`): a new
database gets it, and an older one the tables and columns it lacks, on open.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["POSTGRES", "SQLITE", "Database", "Dialect", "read_time"]


@dataclass(frozen=True)
class Dialect:
    name: str
    begin: str
    """The statement that opens a write transaction (SQLite takes the write lock at once: a writer
    that read first and then met another's commit would fail, where this one waits its turn)."""
    types: dict[str, str]
    """The schema's column types by the names `_SCHEMA` uses."""
    tables: str
    columns: str
    """The catalogue: the tables of the database, the columns of table `:table`."""
    guard: str = ""
    """What `ALTER TABLE ... ADD COLUMN` takes to tolerate a lost race (Postgres workers open at once)."""

    def time(self, when: datetime) -> str | datetime:
        """A time as the store keeps it: in SQLite, text in UTC without a zone, as SQLAlchemy wrote
        it (castbench's older files read the same); Postgres takes the `datetime`."""
        if self is POSTGRES:
            return when
        return (when.astimezone(UTC) if when.tzinfo else when).strftime("%Y-%m-%d %H:%M:%S.%f")

    def sql(self, query: str) -> str:
        """`query`, written with `:name` parameters, in the driver's style."""
        if self.name == "sqlite":
            return query
        return _NAMED.sub(r"%(\1)s", query.replace("%", "%%"))


_NAMED = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")

SQLITE = Dialect(
    name="sqlite",
    begin="BEGIN IMMEDIATE",
    types={"time": "DATETIME", "zoned": "DATETIME", "serial": "INTEGER"},
    tables="SELECT name FROM sqlite_master WHERE type = 'table'",
    columns="SELECT name FROM pragma_table_info(:table)",
)
POSTGRES = Dialect(
    name="postgresql",
    begin="BEGIN",
    types={"time": "TIMESTAMP WITHOUT TIME ZONE", "zoned": "TIMESTAMP WITH TIME ZONE", "serial": "SERIAL"},
    tables="SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
    columns=(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = :table"
    ),
    guard=" IF NOT EXISTS",
)


def read_time(value: str | datetime | None) -> datetime | None:
    """A stored time in UTC: SQLite keeps text without a zone, Postgres a `datetime`."""
    if value is None:
        return None
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class Database:
    """Connections to one store's database (`connect` makes one)."""

    def __init__(self, dialect: Dialect, connect: Callable[[], Any], *, shared: bool = False) -> None:
        self.dialect = dialect
        self._connect = connect
        self._local = threading.local()
        self._shared: Any = connect() if shared else None
        self._lock = threading.RLock() if shared else None

    def connect(self) -> Any:
        """A new connection (the caller closes it), or the shared one of an in-memory database."""
        return self._shared if self._shared is not None else self._connect()

    def connection(self) -> Any:
        """This thread's connection."""
        if self._shared is not None:
            return self._shared
        held: tuple[int, Any] | None = getattr(self._local, "held", None)
        if held is None or held[0] != os.getpid() or getattr(held[1], "broken", False):
            held = (os.getpid(), self._connect())
            self._local.held = held
        return held[1]

    def execute(self, query: str, values: dict[str, Any] | None = None) -> Any:
        """Run one statement (its own transaction); the cursor."""
        return self.connection().execute(self.dialect.sql(query), values or {})

    def one(self, query: str, values: dict[str, Any] | None = None) -> tuple[Any, ...] | None:
        row = self.execute(query, values).fetchone()
        return None if row is None else tuple(row)

    @contextmanager
    def transaction(self) -> Iterator[Callable[..., Any]]:
        """A write transaction; yields `execute(query, values)` within it."""
        connection = self.connection()
        with self._lock or nullcontext():
            connection.execute(self.dialect.begin)
            try:
                yield lambda query, values=None: connection.execute(self.dialect.sql(query), values or {})
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    @contextmanager
    def rows(self, query: str, values: dict[str, Any], batch: int) -> Iterator[Iterator[tuple[Any, ...]]]:
        """The rows of a SELECT, fetched `batch` at a time on a connection of their own (the
        caller may write while it reads them; Postgres keeps them in a server-side cursor)."""
        connection = self.connect()
        try:
            if self.dialect is POSTGRES:
                connection.autocommit = False  # a server-side cursor lives in a transaction
                cursor = connection.cursor(name="castbench_rows")
                cursor.execute(self.dialect.sql(query), values)
            else:
                cursor = connection.execute(query, values)
            yield (tuple(row) for rows in iter(lambda: cursor.fetchmany(batch), []) for row in rows)
        finally:
            if connection is not self._shared:
                connection.close()

    def current(self) -> bool:
        """Whether every table and column castbench writes is there."""
        tables = {name for (name,) in self.execute(self.dialect.tables)}
        if not tables >= TABLES:
            return False
        return all(columns.keys() <= self._columns(table) for table, columns in ADDED_COLUMNS.items())

    def _columns(self, table: str) -> set[str]:
        return {name for (name,) in self.execute(self.dialect.columns, {"table": table})}

    def create_schema(self) -> None:
        """Create the tables, indexes and columns missing (all of them in a new database), in one
        transaction: processes opening a new store at once take turns (Postgres: an advisory lock,
        as concurrent CREATE TABLEs collide in its catalogue). A Postgres trial seed column of an
        older castbench (32-bit, too small for castbench's 63-bit seeds) becomes BIGINT."""
        types = self.dialect.types
        with self.transaction() as execute:
            if self.dialect is POSTGRES:
                execute("SELECT pg_advisory_xact_lock(:key)", {"key": _SCHEMA_LOCK})
            for statement in _SCHEMA:
                execute(_if_not_exists(statement.format(**types)))
            for table, columns in ADDED_COLUMNS.items():
                have = {name for (name,) in execute(self.dialect.columns, {"table": table})}
                for name, kind in columns.items():
                    if name not in have:
                        execute(f"ALTER TABLE {table} ADD COLUMN{self.dialect.guard} {name} {types[kind]}")
            if self.dialect is POSTGRES:
                seed = execute(
                    "SELECT data_type FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND table_name = 'trial' AND column_name = 'seed'"
                ).fetchone()
                if seed is not None and seed[0] == "integer":
                    execute("ALTER TABLE trial ALTER COLUMN seed TYPE BIGINT")


_SCHEMA_LOCK = 0x63617374  # any constant: the advisory lock castbench processes take for DDL


def _if_not_exists(statement: str) -> str:
    """(SQLite keeps the statement without the clause: a new file's schema reads as before.)"""
    for kind in ("CREATE TABLE ", "CREATE INDEX "):
        if statement.startswith(kind):
            return kind + "IF NOT EXISTS " + statement.removeprefix(kind)
    return statement


ADDED_COLUMNS = {"run": {"updated": "time"}}
"""Columns added since the first schema: databases made before gain them, empty, on opening."""

TABLES = frozenset({"run", "trial", "worker", "claim", "run_lease", "cache"})

_SCHEMA = (
    """CREATE TABLE run (
\tid VARCHAR NOT NULL, 
\tcreated {time} NOT NULL, 
\tconfig_hash VARCHAR NOT NULL, 
\tconfig_json VARCHAR NOT NULL, 
\tmeta_json VARCHAR NOT NULL, 
\tstatus VARCHAR NOT NULL, 
\tupdated {time}, 
\tPRIMARY KEY (id)
)""",
    "CREATE INDEX ix_run_config_hash ON run (config_hash)",
    """CREATE TABLE cache (
\t"key" VARCHAR NOT NULL, 
\tkind VARCHAR NOT NULL, 
\tvalue_json VARCHAR NOT NULL, 
\tcreated {zoned} NOT NULL, 
\tPRIMARY KEY ("key")
)""",
    """CREATE TABLE trial (
\tid {serial} NOT NULL, 
\trun_id VARCHAR NOT NULL, 
\tdomain VARCHAR NOT NULL, 
\ttask_id VARCHAR NOT NULL, 
\ttrial_index INTEGER NOT NULL, 
\tseed BIGINT NOT NULL, 
\tstatus VARCHAR NOT NULL, 
\treward FLOAT, 
\tend_reason VARCHAR NOT NULL, 
\tn_steps INTEGER NOT NULL, 
\trecord_json VARCHAR NOT NULL, 
\tPRIMARY KEY (id), 
\tUNIQUE (run_id, domain, task_id, trial_index), 
\tFOREIGN KEY(run_id) REFERENCES run (id)
)""",
    "CREATE INDEX ix_trial_run_id ON trial (run_id)",
    """CREATE TABLE worker (
\tid VARCHAR NOT NULL, 
\trun_id VARCHAR NOT NULL, 
\thost VARCHAR NOT NULL, 
\tpid INTEGER NOT NULL, 
\tstarted {zoned} NOT NULL, 
\theartbeat {zoned} NOT NULL, 
\tfinished {zoned}, 
\ttrials_done INTEGER NOT NULL, 
\tlease_s FLOAT NOT NULL, 
\tPRIMARY KEY (id), 
\tFOREIGN KEY(run_id) REFERENCES run (id)
)""",
    "CREATE INDEX ix_worker_run_id ON worker (run_id)",
    """CREATE TABLE claim (
\trun_id VARCHAR NOT NULL, 
\tdomain VARCHAR NOT NULL, 
\ttask_id VARCHAR NOT NULL, 
\ttrial_index INTEGER NOT NULL, 
\tworker_id VARCHAR NOT NULL, 
\tstate VARCHAR NOT NULL, 
\tlease_until {zoned} NOT NULL, 
\tfinished_at {zoned}, 
\tPRIMARY KEY (run_id, domain, task_id, trial_index), 
\tFOREIGN KEY(run_id) REFERENCES run (id)
)""",
    "CREATE INDEX ix_claim_worker_id ON claim (worker_id)",
    """CREATE TABLE run_lease (
\trun_id VARCHAR NOT NULL, 
\thost VARCHAR NOT NULL, 
\tpid INTEGER NOT NULL, 
\theartbeat {zoned} NOT NULL, 
\tPRIMARY KEY (run_id), 
\tFOREIGN KEY(run_id) REFERENCES run (id)
)""",
)
"""The schema, statement for statement as SQLAlchemy wrote it from the SQLModel tables castbench
had before (a SQLite file keeps the text: the lines end with a space before the newline), the
types by dialect. One row per run, one per trial holding its whole typed record as JSON (every
figure can be recomputed from the store alone); `worker` and `claim` are a shared store's
(`castbench._records.store.leases`), `run_lease` says which process runs a run, `cache` keeps
figures derived from the store's inputs alone (keyed by a digest of all they depend on)."""
