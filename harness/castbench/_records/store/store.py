"""The results store: runs and their trials in SQLite (default) or Postgres (shared).

Finished trials are committed as they end, those that ended during the previous commit together
in one transaction (`castbench._run.commits`), so a killed run loses at most the trials in
flight and the few finished in the last moments (a resume runs exactly those again). Re-running
the same configuration finds the run by its config hash and only runs what is missing; a trial
is never stored twice. A Postgres store is
`shared`: several `castbench eval` processes may work on one run, each claiming trials with a
lease (`castbench._records.store.leases`). Its schema is created, or migrated in place, on open.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from castbench._base.defaults import DEFAULT_DB
from castbench._base.places import record_place, record_port
from castbench._records.config import RUN_CONFIG, RunConfig, read_config
from castbench._records.migrations import RecordVersionError
from castbench._records.store.access import read_only_engine, readable_schema_problem, sqlite_file
from castbench._records.store.connect import db_url, plain_db_errors

if TYPE_CHECKING:  # SQLAlchemy loads with an engine (Postgres, in memory, read-only, a new schema)
    from sqlalchemy.engine import Engine

    from castbench._records.store.digests import DigestCheck
    from castbench._records.store.tables import RunRow
    from castbench._records.trial import TrialRecord  # with the grading: when trials are read or written

__all__ = [
    "DEFAULT_DB",
    "HEARTBEAT_S",
    "ResultsStore",
    "StoreError",
    "StoredRun",
    "TrialKey",
    "last_written",
]

TrialKey = tuple[str, str, int]
"""(domain, task id, trial index)"""

HEARTBEAT_S = 30.0
"""How often a running process renews its lease; one not renewed for four times that is stale."""


_COLUMNS = (
    "run_id",
    "domain",
    "task_id",
    "trial_index",
    "seed",
    "status",
    "reward",
    "end_reason",
    "n_steps",
    "record_json",
)
_INSERT = f"INSERT INTO trial ({', '.join(_COLUMNS)}) VALUES ({', '.join(':' + c for c in _COLUMNS)})"
_INSERT_OR_SKIP = _INSERT + " ON CONFLICT DO NOTHING"
"""The hot path of a run, one statement per trial (SQLite and Postgres)."""


def _record_json(record: TrialRecord) -> str:
    from castbench._records.trial import TRIAL_RECORD

    return TRIAL_RECORD.dumps(record)


def _columns(run_id: str, record: TrialRecord) -> dict[str, Any]:
    """A trial's row: the columns the store queries, plus the whole record as JSON, written
    losslessly (`castbench._base.lossless`): whatever an agent produced reads back as it was. The
    record carries its version (`castbench._records.migrations`)."""
    return {
        "run_id": run_id,
        "domain": record.domain,
        "task_id": record.task_id,
        "trial_index": record.trial_index,
        "seed": record.seed,
        "status": record.status,
        "reward": record.reward,
        "end_reason": record.end_reason,
        "n_steps": len(record.steps),
        "record_json": _record_json(record),
    }


class StoreError(LookupError):
    pass


@dataclass
class StoredRun:
    """A run's row (`castbench._records.store.tables.RunRow`'s columns), as the store reads it."""

    id: str
    created: datetime
    config_hash: str
    config_json: str
    meta_json: str
    """Package versions, git commit, platform: context that does not change scores."""
    status: str = "running"
    updated: datetime | None = None
    """When the run was last written (opened, resumed, finished): what `latest` means."""


@dataclass(frozen=True)
class _Lease:
    host: str
    pid: int
    heartbeat: datetime


def _sqlite_pragmas(engine: Engine) -> None:
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        _pragmas(dbapi_connection)


def _pragmas(connection: sqlite3.Connection) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # durable against a killed process, fast commits
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def in_memory_url(url: str) -> bool:
    """A SQLite database that lives in this process's memory (`sqlite://`, `sqlite:///:memory:`)."""
    if not url.startswith("sqlite"):
        return False
    rest = url.split("://", 1)[1].split("?", 1)[0]
    return rest in ("", "/", "/:memory:") or "mode=memory" in url


def engine_url(url: str) -> str:
    """The SQLAlchemy URL for `url`: `postgresql://...` (and `postgres://...`) use psycopg 3."""
    for scheme in _POSTGRES_SCHEMES:
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url.removeprefix(scheme)
    return url


_SCHEMA_LOCK = 0x63617374  # any constant: the advisory lock castbench processes take for DDL


def _create_postgres_schema(engine: Engine) -> None:
    """Create the schema, or bring one written by an older castbench up to date, in place (trial
    seeds were 32-bit columns, too small for castbench's 63-bit seeds). Workers starting at once
    take turns: concurrent CREATE TABLEs collide in Postgres's catalog."""
    from sqlalchemy import text
    from sqlmodel import SQLModel

    with engine.begin() as connection:
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK})
        SQLModel.metadata.create_all(connection)
        kind = connection.execute(
            text(
                "SELECT data_type FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = 'trial' AND column_name = 'seed'"
            )
        ).scalar()
        if kind == "integer":
            connection.execute(text("ALTER TABLE trial ALTER COLUMN seed TYPE BIGINT"))


_ADDED_COLUMNS = {"run": {"updated": "TIMESTAMP"}}
"""Columns added since the first schema: databases made before gain them, empty, on opening."""

_TABLES = frozenset({"run", "trial", "worker", "claim", "run_lease", "cache"})
"""Every table of the schema (`castbench._records.store.tables`)."""


def _add_missing_columns(engine: Engine) -> None:
    """(Postgres workers may open a store at once: there the statement tolerates a lost race.)"""
    from sqlalchemy import inspect

    guard = " IF NOT EXISTS" if engine.dialect.name == "postgresql" else ""
    inspector = inspect(engine)
    for table, columns in _ADDED_COLUMNS.items():
        have = {column["name"] for column in inspector.get_columns(table)}
        with engine.begin() as connection:
            for name, kind in columns.items():
                if name not in have:
                    connection.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN{guard} {name} {kind}")


_SCHEMA = (
    """CREATE TABLE run (
\tid VARCHAR NOT NULL, 
\tcreated DATETIME NOT NULL, 
\tconfig_hash VARCHAR NOT NULL, 
\tconfig_json VARCHAR NOT NULL, 
\tmeta_json VARCHAR NOT NULL, 
\tstatus VARCHAR NOT NULL, 
\tupdated DATETIME, 
\tPRIMARY KEY (id)
)""",
    "CREATE INDEX ix_run_config_hash ON run (config_hash)",
    """CREATE TABLE cache (
\t"key" VARCHAR NOT NULL, 
\tkind VARCHAR NOT NULL, 
\tvalue_json VARCHAR NOT NULL, 
\tcreated DATETIME NOT NULL, 
\tPRIMARY KEY ("key")
)""",
    """CREATE TABLE trial (
\tid INTEGER NOT NULL, 
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
\tstarted DATETIME NOT NULL, 
\theartbeat DATETIME NOT NULL, 
\tfinished DATETIME, 
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
\tlease_until DATETIME NOT NULL, 
\tfinished_at DATETIME, 
\tPRIMARY KEY (run_id, domain, task_id, trial_index), 
\tFOREIGN KEY(run_id) REFERENCES run (id)
)""",
    "CREATE INDEX ix_claim_worker_id ON claim (worker_id)",
    """CREATE TABLE run_lease (
\trun_id VARCHAR NOT NULL, 
\thost VARCHAR NOT NULL, 
\tpid INTEGER NOT NULL, 
\theartbeat DATETIME NOT NULL, 
\tPRIMARY KEY (run_id), 
\tFOREIGN KEY(run_id) REFERENCES run (id)
)""",
)
"""The schema SQLAlchemy creates in SQLite from `castbench._records.store.tables`, statement for statement
(`tests/core/store/test_native_sqlite.py` compares the two): a new file is made without loading
SQLAlchemy. (The lines end as SQLAlchemy ends them, with a space before the newline.)"""


def _sql_time(when: datetime) -> str:
    """A time as SQLAlchemy writes it in SQLite (UTC, no zone): both read each other's rows."""
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _read_time(value: str | None) -> datetime | None:
    """A stored time, as SQLModel reads it: in UTC (SQLite keeps no zone)."""
    return None if value is None else datetime.fromisoformat(value).replace(tzinfo=UTC)


class _SqliteFile:
    """A SQLite results file whose schema is current, read and written with the standard
    library's `sqlite3`: a command that reads or resumes a run loads no SQLAlchemy (#59). One
    connection per thread (the commit thread writes while the run reads), in autocommit mode,
    with the pragmas SQLAlchemy's engine sets; a process forked with one opens its own."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()

    def connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        _pragmas(connection)
        return connection

    def connection(self) -> sqlite3.Connection:
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "held", None)
        if held is None or held[0] != os.getpid():
            held = (os.getpid(), self.connect())
            self._local.held = held
        return held[1]

    def current(self) -> bool:
        """Whether every table and column castbench writes is there (else SQLAlchemy makes them)."""
        connection = self.connection()
        tables = {
            name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if not tables >= _TABLES:
            return False
        for table, columns in _ADDED_COLUMNS.items():
            have = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
            if not columns.keys() <= have:
                return False
        return True

    def create(self) -> bool:
        """Create the schema in a file that holds no table (a new one); False, creating nothing,
        when it holds any (an older castbench's, or another program's: SQLAlchemy adds to it)."""
        connection = self.connection()
        connection.execute("BEGIN IMMEDIATE")  # another process making the same file waits
        try:
            if connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'").fetchone() is not None:
                connection.execute("ROLLBACK")
                return self.current()
            for statement in _SCHEMA:
                connection.execute(statement)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        return True

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that holds the write lock from its start: a writer that read first
        and then found another's commit in between would fail at once, where this one waits its
        turn (the busy timeout)."""
        connection = self.connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")


class ResultsStore:
    def __init__(self, url: str = DEFAULT_DB, read_only: bool = False) -> None:
        """`url`: a SQLAlchemy URL or a plain path to a SQLite file. `StoreError` (one line that
        names the problem and the fix) when it cannot be opened. An empty `url` is refused: it
        would mean an in-memory database, and the run would be lost on exit (ask for that with
        `sqlite://`).

        `read_only`: the caller only reads (`runs`, `compare`, `export`, `view`, `gate`). A SQLite
        file that cannot be written is then opened read-only and nothing is written to it or
        beside it (`castbench._records.store.access`); without `read_only` such a file is refused before
        any work. A missing file is never created for a reader.

        A writable SQLite file whose schema is current is read and written with `sqlite3`
        (`_SqliteFile`); `engine`, SQLAlchemy's, is made on first use (always for another
        backend, an in-memory database, a read-only file, or a schema to create or update)."""
        if not url.strip():
            raise StoreError("--db is empty: give a SQLite file path or a database URL")
        url = db_url(url)
        self.url = url
        self._sqlite = url.startswith("sqlite")
        self.shared = url.startswith(_POSTGRES_SCHEMES) or url.startswith("postgresql+")
        """Several processes may work on one run (trials are claimed with leases)."""
        self.writable = True
        """False for a SQLite file opened read-only: derived figures are not kept (`cache`)."""
        self._file: _SqliteFile | None = None
        file = sqlite_file(url)
        _remember(url)
        if file is not None:
            missing = file.missing()
            if read_only and missing is not None:
                raise StoreError(f"--db {url}: {missing}")
            problem = file.write_problem()
            if problem is not None and read_only:
                self.writable = False
                with plain_db_errors(url, StoreError):
                    self.engine = read_only_engine(file)
                    unreadable = readable_schema_problem(self.engine)
                if unreadable is not None:
                    raise StoreError(f"--db {url}: {unreadable}")
                return
            if problem is not None:
                raise StoreError(f"--db {url}: {problem}, and this command writes; use a writable folder")
        with plain_db_errors(url, StoreError):
            if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
                path = url.removeprefix("sqlite:///").split("?", 1)[0].removeprefix("file:")
                folder = Path(path).parent
                if not folder.exists() and url != db_url(DEFAULT_DB):  # a mistyped folder is a
                    # slip, not a new store: only the default one's folder is made
                    raise StoreError(
                        f"--db {url}: the folder {folder} does not exist; create it first "
                        f"(mkdir -p {folder}) or correct the path"
                    )
                folder.mkdir(parents=True, exist_ok=True)
            if file is not None and not file.query and not in_memory_url(url):
                self._file = _SqliteFile(str(file.path))
            if self._file is None or not (self._file.current() or self._file.create()):
                self._schema(self.engine)
        _remember(url)  # a SQLite file exists now

    @cached_property
    def engine(self) -> Engine:
        """SQLAlchemy's engine on this store (made on first use for a file `sqlite3` serves)."""
        from sqlalchemy.pool import StaticPool
        from sqlmodel import create_engine

        with plain_db_errors(self.url, StoreError):
            if in_memory_url(self.url):  # one database for every thread of this process (the
                # commit thread included): SQLite gives each new connection an empty one of its own
                engine = create_engine(
                    engine_url(self.url), poolclass=StaticPool, connect_args={"check_same_thread": False}
                )
            else:
                engine = create_engine(engine_url(self.url), pool_pre_ping=self.shared)
            if self._sqlite:
                _sqlite_pragmas(engine)
        return engine

    def _schema(self, engine: Engine) -> None:
        """Create the schema, or bring an older one up to date."""
        from sqlmodel import SQLModel

        import castbench._records.store.tables  # noqa: F401  the tables SQLModel's metadata creates

        if engine.dialect.name == "postgresql":
            _create_postgres_schema(engine)
        else:
            SQLModel.metadata.create_all(engine)
        _add_missing_columns(engine)

    # -- runs ------------------------------------------------------------------------------
    def open_run(self, config: RunConfig, meta: dict[str, Any], fresh: bool = False) -> tuple[str, bool]:
        """The run for this config: the latest one with the same hash (resumed) unless `fresh`.
        Returns (run id, resumed)."""
        digest = config.config_hash()
        if self._file is not None:
            with plain_db_errors(self.url, StoreError):
                connection = self._file.connection()
                existing = [
                    run_id
                    for (run_id,) in connection.execute(
                        "SELECT id FROM run WHERE config_hash = ? ORDER BY created", (digest,)
                    )
                ]
                if existing and not fresh:
                    return existing[-1], True
                run_id = f"r-{digest[:12]}" + (f"-{len(existing) + 1}" if existing else "")
                now = _sql_time(datetime.now(UTC))
                try:
                    connection.execute(
                        "INSERT INTO run (id, created, config_hash, config_json, meta_json, status, updated) "
                        "VALUES (?, ?, ?, ?, ?, 'running', ?)",
                        (
                            run_id,
                            now,
                            digest,
                            RUN_CONFIG.dumps(config),
                            json.dumps(meta, sort_keys=True),
                            now,
                        ),
                    )
                except sqlite3.IntegrityError:  # another process opened the same run a moment earlier
                    return run_id, True
            return run_id, False
        from sqlalchemy.exc import IntegrityError
        from sqlmodel import Session, select

        from castbench._records.store.tables import RunRow

        with plain_db_errors(self.url, StoreError), Session(self.engine) as session:
            rows = session.exec(
                select(RunRow).where(RunRow.config_hash == digest).order_by(RunRow.created)  # type: ignore[arg-type]
            ).all()
            if rows and not fresh:
                return rows[-1].id, True
            run_id = f"r-{digest[:12]}" + (f"-{len(rows) + 1}" if rows else "")
            now_time = datetime.now(UTC)
            session.add(
                RunRow(
                    id=run_id,
                    created=now_time,
                    updated=now_time,
                    config_hash=digest,
                    config_json=RUN_CONFIG.dumps(config),
                    meta_json=json.dumps(meta, sort_keys=True),
                )
            )
            try:
                session.commit()
            except IntegrityError:  # another worker opened the same run a moment earlier: join it
                session.rollback()
                return run_id, True
        return run_id, False

    def set_config(self, run_id: str, config: RunConfig) -> None:
        """Replace a run's config (and so its identity): only to give it more trials per task."""
        self._update_run(
            run_id, config_json=RUN_CONFIG.dumps(config), config_hash=config.config_hash(), updated=_now()
        )

    def set_status(self, run_id: str, status: str) -> None:
        self._update_run(run_id, status=status, updated=_now())

    def _update_run(self, run_id: str, **values: Any) -> None:
        with plain_db_errors(self.url, StoreError):
            if self._file is not None:
                columns = ", ".join(f"{name} = ?" for name in values)
                shown = [
                    _sql_time(value) if isinstance(value, datetime) else value for value in values.values()
                ]
                cursor = self._file.connection().execute(
                    f"UPDATE run SET {columns} WHERE id = ?", (*shown, run_id)
                )
                if not cursor.rowcount:
                    raise StoreError(f"no run '{run_id}' in {self.url}")
                return
            from sqlmodel import Session

            from castbench._records.store.tables import RunRow

            with Session(self.engine) as session:
                row = session.get(RunRow, run_id)
                if row is None:
                    raise StoreError(f"no run '{run_id}' in {self.url}")
                for name, value in values.items():
                    setattr(row, name, value)
                session.add(row)
                session.commit()

    def runs(self) -> list[StoredRun]:
        """Every run, oldest first, with its true status: a `running` run that no live process
        holds reads as `interrupted`."""
        with plain_db_errors(self.url, StoreError):
            if self._file is not None:
                connection = self._file.connection()
                rows = [
                    StoredRun(run_id, _read_time(created), digest, config, meta, status, _read_time(updated))  # type: ignore[arg-type]
                    for run_id, created, digest, config, meta, status, updated in connection.execute(
                        "SELECT id, created, config_hash, config_json, meta_json, status, updated "
                        "FROM run ORDER BY created"
                    )
                ]
                leases = {
                    run_id: _Lease(host, pid, _read_time(beat))  # type: ignore[arg-type]
                    for run_id, host, pid, beat in connection.execute(
                        "SELECT run_id, host, pid, heartbeat FROM run_lease"
                    )
                }
            else:
                from sqlmodel import Session, select

                from castbench._records.store.tables import RunLease, RunRow

                with Session(self.engine) as session:
                    rows = [
                        StoredRun(
                            row.id,
                            row.created,
                            row.config_hash,
                            row.config_json,
                            row.meta_json,
                            row.status,
                            row.updated,
                        )
                        for row in session.exec(select(RunRow).order_by(RunRow.created)).all()  # type: ignore[arg-type]
                    ]
                    leases = {
                        lease.run_id: _Lease(lease.host, lease.pid, lease.heartbeat)
                        for lease in session.exec(select(RunLease)).all()
                    }
        for row in rows:
            if row.status == "running" and not _alive(leases.get(row.id)):
                row.status = "interrupted"
        return rows

    # -- who is running a run ----------------------------------------------------------------
    def hold(self, run_id: str) -> None:
        """Record that this process runs `run_id` (renew with `heartbeat`, end with `release`)."""
        with plain_db_errors(self.url, StoreError):
            if self._file is not None:
                self._file.connection().execute(
                    "INSERT INTO run_lease (run_id, host, pid, heartbeat) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (run_id) DO UPDATE SET host = excluded.host, pid = excluded.pid, "
                    "heartbeat = excluded.heartbeat",
                    (run_id, socket.gethostname(), os.getpid(), _sql_time(_now())),
                )
                return
            from sqlmodel import Session

            from castbench._records.store.tables import RunLease

            lease = RunLease(run_id=run_id, host=socket.gethostname(), pid=os.getpid(), heartbeat=_now())
            with Session(self.engine) as session:
                session.merge(lease)
                session.commit()

    def heartbeat(self, run_id: str) -> None:
        """Renew this process's lease on `run_id` (`StoreError` when the database cannot take it)."""
        self._update_lease(run_id, renew=True)

    def release(self, run_id: str) -> None:
        self._update_lease(run_id, renew=False)

    def _update_lease(self, run_id: str, renew: bool) -> None:
        with plain_db_errors(self.url, StoreError):
            if self._file is not None:
                connection = self._file.connection()
                if renew:
                    connection.execute(
                        "UPDATE run_lease SET heartbeat = ? WHERE run_id = ?", (_sql_time(_now()), run_id)
                    )
                else:
                    connection.execute("DELETE FROM run_lease WHERE run_id = ?", (run_id,))
                return
            from sqlmodel import Session

            from castbench._records.store.tables import RunLease

            with Session(self.engine) as session:
                lease = session.get(RunLease, run_id)
                if lease is None:
                    return
                if renew:
                    lease.heartbeat = _now()
                    session.add(lease)
                else:
                    session.delete(lease)
                session.commit()

    def run(self, ref: str) -> StoredRun:
        """A run by id or unique id prefix; `latest` for the one most recently written (a resumed
        old run is later than one created before the resume)."""
        if not ref.strip():  # an empty prefix would match every run, and one run pick itself
            raise StoreError("no run given: name a run id, a unique prefix of one, or 'latest'")
        runs = self.runs()
        if ref == "latest" and runs:
            return max(runs, key=last_written)
        matches = [row for row in runs if row.id == ref] or [row for row in runs if row.id.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise StoreError(f"no run '{ref}' in {self.url} (see `castbench runs list`)")
        raise StoreError(f"run '{ref}' is ambiguous: {', '.join(row.id for row in matches)}")

    def config(self, run_id: str) -> RunConfig:
        """The run's config in the current shape (`RecordVersionError` for one from a newer castbench)."""
        row = self.run(run_id)
        return read_config(row.config_json, f"run {row.id}")

    # -- derived figures ---------------------------------------------------------------------
    def cached(self, key: str) -> str | None:
        """The value stored under `key` by `cache`, or None (never stored, or unreadable)."""
        if self._file is not None:
            try:
                found = (
                    self._file.connection()
                    .execute("SELECT value_json FROM cache WHERE key = ?", (key,))
                    .fetchone()
                )
            except sqlite3.Error:
                return None
            return None if found is None else str(found[0])
        from sqlalchemy.exc import SQLAlchemyError
        from sqlmodel import Session

        from castbench._records.store.tables import CacheRow

        try:
            with Session(self.engine) as session:
                row = session.get(CacheRow, key)
        except SQLAlchemyError:
            return None
        return None if row is None else row.value_json

    def cache(self, key: str, kind: str, value_json: str) -> None:
        """Keep a derived figure under `key` (a digest of all it depends on). Best effort: a store
        that cannot take it (read-only, another writer's row) only means it is computed again."""
        if not self.writable:
            return
        if self._file is not None:
            with suppress(sqlite3.Error):
                self._file.connection().execute(
                    "INSERT INTO cache (key, kind, value_json, created) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, value_json = excluded.value_json, "
                    "created = excluded.created",
                    (key, kind, value_json, _sql_time(_now())),
                )
            return
        from sqlalchemy.exc import SQLAlchemyError
        from sqlmodel import Session

        from castbench._records.store.tables import CacheRow

        try:
            with Session(self.engine) as session:
                session.merge(CacheRow(key=key, kind=kind, value_json=value_json, created=_now()))
                session.commit()
        except SQLAlchemyError:
            pass

    # -- trials ----------------------------------------------------------------------------
    def scored_keys(self, run_id: str) -> set[TrialKey]:
        with plain_db_errors(self.url, StoreError):
            if self._file is not None:
                found = self._file.connection().execute(
                    "SELECT domain, task_id, trial_index FROM trial WHERE run_id = ? AND status = 'scored'",
                    (run_id,),
                )
                return {(domain, task, int(index)) for domain, task, index in found}
            from sqlmodel import Session, select

            from castbench._records.store.tables import TrialRow

            with Session(self.engine) as session:
                rows = session.exec(
                    select(TrialRow.domain, TrialRow.task_id, TrialRow.trial_index).where(
                        TrialRow.run_id == run_id, TrialRow.status == "scored"
                    )
                ).all()
            return {(domain, task, index) for domain, task, index in rows}

    def add_trial(self, run_id: str, record: TrialRecord) -> bool:
        """Store one finished trial in its own transaction. A scored trial replaces an earlier
        errored try of the same trial; a second scored copy is ignored (never stored twice).
        Returns whether the record was stored."""
        return self.add_trials(run_id, [record])[0] is not None

    def add_trials(
        self,
        run_id: str,
        records: Sequence[TrialRecord],
        unwritable: Callable[[TrialRecord, Exception], TrialRecord] | None = None,
    ) -> list[TrialRecord | None]:
        """Store finished trials in one transaction (`add_trial`'s rules for each): a run's
        engine commits the trials that finished while its previous commit was under way together
        (`castbench._run.commits`), one transaction and one digest write for all of them.
        Returns each record as stored: itself, its replacement from `unwritable` (called with a
        record that cannot be written and why; without it the error is raised), a copy counting
        the attempts of the errored try it replaced, or None where a scored copy was there.

        The common case is one INSERT per trial that skips on conflict; only a conflict takes the
        slower path that looks at the stored row (in a transaction of its own)."""
        from castbench._records.store.digests import record_digests

        rows: list[tuple[TrialRecord, dict[str, Any]]] = []
        for record in records:
            try:
                values = _columns(run_id, record)
            except (ValueError, TypeError) as exc:  # PydanticSerializationError, json's
                if unwritable is None:
                    raise
                record = unwritable(record, exc)
                values = _columns(run_id, record)
            rows.append((record, values))
        stored: list[TrialRecord | None] = [None] * len(rows)
        written: list[dict[str, Any]] = []
        conflicts = list(range(len(rows)))
        if rows and self._file is not None:
            conflicts = []
            with self._file.transaction() as connection:
                for index, (record, values) in enumerate(rows):
                    if connection.execute(_INSERT_OR_SKIP, values).rowcount:
                        stored[index] = record
                        written.append(values)
                    else:
                        conflicts.append(index)
        elif rows and self.engine.dialect.name in ("sqlite", "postgresql"):
            from sqlalchemy import text

            conflicts = []
            insert = text(_INSERT_OR_SKIP)
            with self.engine.begin() as connection:
                for index, (record, values) in enumerate(rows):
                    if connection.execute(insert, values).rowcount:
                        stored[index] = record
                        written.append(values)
                    else:
                        conflicts.append(index)
        for index in conflicts:
            replaced = self._replace_errored(run_id, rows[index][0])
            if replaced is not None:
                stored[index], values = replaced
                written.append(values)
        record_digests(
            self.url,
            [(v["run_id"], v["domain"], v["task_id"], v["trial_index"], v["record_json"]) for v in written],
        )
        return stored

    def _replace_errored(self, run_id: str, record: TrialRecord) -> tuple[TrialRecord, dict[str, Any]] | None:
        """A trial whose row is there already: replace an errored try (its attempts counted in);
        None, storing nothing, when the stored one is scored."""
        if self._file is not None:
            with self._file.transaction() as connection:
                found = connection.execute(
                    "SELECT id, status, record_json FROM trial "
                    "WHERE run_id = ? AND domain = ? AND task_id = ? AND trial_index = ?",
                    (run_id, record.domain, record.task_id, record.trial_index),
                ).fetchone()
                if found is not None:
                    row_id, status, record_json = found
                    if status == "scored":
                        return None
                    record = record.model_copy(update={"attempts": record.attempts + _attempts(record_json)})
                    connection.execute("DELETE FROM trial WHERE id = ?", (row_id,))
                values = _columns(run_id, record)
                connection.execute(_INSERT, values)
            return record, values
        from sqlmodel import Session, select

        from castbench._records.store.tables import TrialRow

        with Session(self.engine) as session:
            existing = session.exec(
                select(TrialRow).where(
                    TrialRow.run_id == run_id,
                    TrialRow.domain == record.domain,
                    TrialRow.task_id == record.task_id,
                    TrialRow.trial_index == record.trial_index,
                )
            ).first()
            if existing is not None:
                if existing.status == "scored":
                    return None
                record = record.model_copy(
                    update={"attempts": record.attempts + _attempts(existing.record_json)}
                )
                session.delete(existing)
                session.flush()
            values = _columns(run_id, record)
            session.add(TrialRow(**values))
            session.commit()
        return record, values

    def check_digests(self, run_id: str) -> DigestCheck:
        """Each stored record of `run_id` against the digest castbench kept outside the store
        when it stored it (`castbench._records.store.digests`)."""
        from castbench._records.store.digests import check_digests

        with (
            plain_db_errors(self.url, StoreError),
            self._rows(
                "SELECT domain, task_id, trial_index, record_json FROM trial WHERE run_id = :run_id",
                {"run_id": run_id},
                batch=256,  # the rows a batch at a time: a run's records are not held to be hashed (#59)
            ) as rows,
        ):
            return check_digests(self.url, run_id, ((d, t, int(i), j) for d, t, i, j in rows))

    @contextmanager
    def _rows(self, query: str, values: dict[str, Any], batch: int) -> Iterator[Iterator[tuple[Any, ...]]]:
        """The rows of a SELECT, fetched `batch` at a time on a connection of their own (the
        caller may write while it reads them)."""
        if self._file is not None:
            connection = self._file.connect()
            try:
                cursor = connection.execute(query, values)
                yield (row for rows in iter(lambda: cursor.fetchmany(batch), []) for row in rows)
            finally:
                connection.close()
            return
        from sqlalchemy import text

        with self.engine.connect() as engine_connection:
            result = engine_connection.execution_options(yield_per=batch).execute(text(query), values)
            yield (tuple(row) for row in result)

    def trials(
        self,
        run_id: str,
        domains: Iterable[str] | None = None,
        *,
        task_id: str | None = None,
        trial_index: int | None = None,
    ) -> list[TrialRecord]:
        """The run's trial records in the current shape (`RecordVersionError` for one written by a
        newer castbench), ordered by (domain, task, trial index); `task_id` / `trial_index` keep
        one task's (or one trial's) in the query, so showing one trial of a 100k-trial run reads
        that trial, not the run. A row that does not read as a record (a damaged or hand-edited
        file) is a `StoreError` naming the trial, and how many of the run's trials do read."""
        return list(self.iter_trials(run_id, domains, task_id=task_id, trial_index=trial_index))

    def iter_trials(
        self,
        run_id: str,
        domains: Iterable[str] | None = None,
        *,
        task_id: str | None = None,
        trial_index: int | None = None,
        batch: int = 256,
    ) -> Iterator[TrialRecord]:
        """`trials`, one record at a time: the rows are fetched `batch` at a time and each record
        is parsed when it is reached, so a reader that keeps only what it derives (`runs why`, a
        page's payloads) holds a batch of rows, not the run. The `StoreError` for unreadable rows
        comes after the readable ones, with the same counts as `trials`."""
        query = "SELECT domain, task_id, trial_index, record_json FROM trial WHERE run_id = :run_id"
        values: dict[str, Any] = {"run_id": run_id}
        if domains is not None:
            names = list(domains)
            values.update({f"domain_{n}": name for n, name in enumerate(names)})
            query += f" AND domain IN ({', '.join(f':domain_{n}' for n in range(len(names))) or 'NULL'})"
        if task_id is not None:
            query += " AND task_id = :task_id"
            values["task_id"] = task_id
        if trial_index is not None:
            query += " AND trial_index = :trial_index"
            values["trial_index"] = trial_index
        query += " ORDER BY domain, task_id, trial_index"
        from castbench._records.trial import TRIAL_RECORD, TrialRecord

        read, unreadable = 0, []
        with plain_db_errors(self.url, StoreError), self._rows(query, values, batch) as rows:
            for domain, task, index, record_json in rows:
                try:
                    record = TRIAL_RECORD.loads(TrialRecord, record_json, f"run {run_id}")
                except RecordVersionError:
                    raise
                except (ValueError, TypeError, UnicodeDecodeError) as exc:
                    first = (str(exc).splitlines() or [type(exc).__name__])[0]
                    unreadable.append(f"{domain}/{task} trial {index} ({first})")
                    continue
                read += 1
                yield record
        if unreadable:
            raise StoreError(
                f"--db {self.url}: run {run_id}: {len(unreadable)} stored trial(s) do not read as records, "
                f"first {unreadable[0]}; the other {read} of {read + len(unreadable)} read "
                "(the row was damaged or edited by hand: restore the file from a copy)"
            )

    def _one(self, query: str, values: dict[str, Any]) -> tuple[Any, ...]:
        if self._file is not None:
            return tuple(self._file.connection().execute(query, values).fetchone())
        from sqlalchemy import text

        with self.engine.connect() as connection:
            return tuple(connection.execute(text(query), values).one())

    def trials_version(self, run_id: str) -> tuple[int, int]:
        """(trials stored, highest row id) of a run: changes whenever a trial is stored or
        replaced, so what was derived from its trials can be kept under it."""
        count, last = self._one(
            "SELECT count(id), max(id) FROM trial WHERE run_id = :run_id", {"run_id": run_id}
        )
        return int(count), int(last or 0)

    def count_trials(self, run_id: str) -> int:
        """Counted by the database: `runs list` of 100k-trial runs fetches no row ids."""
        with plain_db_errors(self.url, StoreError):
            (count,) = self._one("SELECT count(id) FROM trial WHERE run_id = :run_id", {"run_id": run_id})
        return int(count)


def _remember(url: str) -> None:
    """Record where results are kept (`castbench._base.places`): a SQLite file, a server's TCP port.
    No agent's sandbox reaches a recorded place, whatever it declares."""
    file = sqlite_file(url)
    if file is not None:
        if file.path.exists():
            record_place(file.path)
        return
    if url.startswith("sqlite"):
        return  # in memory
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return
    defaults = {"postgresql": 5432, "mysql": 3306}
    port = parsed.port or defaults.get(parsed.get_backend_name())
    if port is not None:  # (its unix sockets: the socket filter refuses every AF_UNIX socket)
        record_port(port)


def last_written(row: StoredRun | RunRow) -> datetime:
    when = row.updated or row.created
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _attempts(record_json: str) -> int:
    return int(json.loads(record_json).get("attempts", 1))


def _now() -> datetime:
    return datetime.now(UTC)


def _alive(lease: _Lease | None) -> bool:
    """Whether a live process holds the lease: renewed lately, and on this host its process
    still exists."""
    if lease is None:
        return False
    beat = lease.heartbeat if lease.heartbeat.tzinfo else lease.heartbeat.replace(tzinfo=UTC)
    if _now() - beat > timedelta(seconds=4 * HEARTBEAT_S):
        return False
    if lease.host != socket.gethostname():
        return True
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True
