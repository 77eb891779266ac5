"""The results store: runs and their trials in SQLite (default) or Postgres (shared).

Finished trials are committed as they end, those that ended during the previous commit together
in one transaction (`castbench._run.commits`), so a killed run loses at most the trials in
flight and the few finished in the last moments (a resume runs exactly those again). Re-running
the same configuration finds the run by its config hash and only runs what is missing; a trial
is never stored twice. A Postgres store is
`shared`: several `castbench eval` processes may work on one run, each claiming trials with a
lease (`castbench._records.store.leases`). Its schema is created, or migrated in place, on open
(`castbench._records.store.database`: the standard library's `sqlite3`, or psycopg).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from castbench._base.defaults import DEFAULT_DB
from castbench._base.deprecation import REMOVAL, CastbenchDeprecationWarning
from castbench._base.places import record_place, record_port
from castbench._records.config import RUN_CONFIG, RunConfig, read_config
from castbench._records.migrations import RecordVersionError
from castbench._records.store.access import (
    SqliteFile,
    read_only_connect,
    readable_schema_problem,
    sqlite_file,
)
from castbench._records.store.connect import db_url, in_memory_url, plain_db_errors, postgres_url
from castbench._records.store.database import POSTGRES, SQLITE, Database, read_time

if TYPE_CHECKING:
    from castbench._records.store.digests import DigestCheck
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
_RUN_COLUMNS = "id, created, config_hash, config_json, meta_json, status, updated"


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
    """A run's row, as the store reads it."""

    id: str
    created: datetime
    config_hash: str
    config_json: str
    meta_json: str
    """Package versions, git commit, platform: context that does not change scores."""
    status: str = "running"
    updated: datetime | None = None
    """When the run was last written (opened, resumed, finished): what `latest` means."""

    @classmethod
    def read(cls, row: Sequence[Any]) -> StoredRun:
        run_id, created, digest, config, meta, status, updated = row
        return cls(run_id, read_time(created), digest, config, meta, status, read_time(updated))  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Lease:
    host: str
    pid: int
    heartbeat: datetime


def _sqlite_connect(target: str, uri: bool) -> Callable[[], sqlite3.Connection]:
    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(target, uri=uri, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")  # durable against a killed process, fast commits
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("PRAGMA foreign_keys=ON")
        return connection

    return connect


def _sqlite_target(url: str) -> tuple[str, bool]:
    """What `sqlite3.connect` takes for a SQLite URL: a path, or a `file:` URI with its query."""
    path, _, query = url.split("://", 1)[1].removeprefix("/").partition("?")
    options = "&".join(part for part in query.split("&") if part and part != "uri=true")
    if not options and not path.startswith("file:"):
        return path or ":memory:", False
    return f"{path if path.startswith('file:') else 'file:' + path}?{options}", True


def _postgres_connect(url: str) -> Callable[[], Any]:
    import psycopg  # the `postgres` extra: an ImportError names it

    def connect() -> Any:
        # the store's times in UTC whatever the server's zone (columns without one are UTC)
        return psycopg.connect(url, autocommit=True, options="-c TimeZone=UTC")

    return connect


def _conflict(exc: BaseException) -> bool:
    """Whether `exc` is a unique key the row to insert would break (another process was first)."""
    psycopg = sys.modules.get("psycopg")
    return isinstance(exc, sqlite3.IntegrityError) or (
        psycopg is not None and isinstance(exc, psycopg.IntegrityError)
    )


def _database_error(exc: BaseException) -> bool:
    psycopg = sys.modules.get("psycopg")
    return isinstance(exc, sqlite3.Error) or (psycopg is not None and isinstance(exc, psycopg.Error))


class ResultsStore:
    def __init__(self, url: str = DEFAULT_DB, read_only: bool = False) -> None:
        """`url`: a database URL (`sqlite:///FILE`, `sqlite://` in memory, `postgresql://...`) or a
        plain path to a SQLite file. `StoreError` (one line that names the problem and the fix)
        when it cannot be opened. An empty `url` is refused: it would mean an in-memory database,
        and the run would be lost on exit (ask for that with `sqlite://`).

        `read_only`: the caller only reads (`runs`, `compare`, `export`, `view`, `gate`). A SQLite
        file that cannot be written is then opened read-only and nothing is written to it or
        beside it (`castbench._records.store.access`); without `read_only` such a file is refused before
        any work. A missing file is never created for a reader."""
        if not url.strip():
            raise StoreError("--db is empty: give a SQLite file path or a database URL")
        url = db_url(url)
        self.url = url
        self.shared = postgres_url(url) is not None
        """Several processes may work on one run (trials are claimed with leases)."""
        self.writable = True
        """False for a SQLite file opened read-only: derived figures are not kept (`cache`)."""
        _remember(url)
        with plain_db_errors(url, StoreError):
            self.db = self._open(None if in_memory_url(url) else sqlite_file(url), read_only)
        _remember(url)  # a SQLite file exists now

    @property
    def engine(self) -> Any:
        """Deprecated, removed in castbench 0.2.0: a SQLAlchemy engine on this store's database
        (not an in-memory one's), for code written when the store ran on SQLAlchemy, which is
        no longer a dependency (installed by the caller, or an `ImportError`). `db` runs SQL."""
        warnings.warn(
            f"ResultsStore.engine is deprecated and will be removed in castbench {REMOVAL}: "
            "use ResultsStore.db (execute, one, transaction, rows)",
            CastbenchDeprecationWarning,
            stacklevel=2,
        )
        from sqlalchemy import create_engine

        server = postgres_url(self.url)
        return create_engine(
            self.url if server is None else server.replace("postgresql:", "postgresql+psycopg:", 1)
        )

    def _open(self, file: SqliteFile | None, read_only: bool) -> Database:
        url = self.url
        server = postgres_url(url)
        if server is not None:
            db = Database(POSTGRES, _postgres_connect(server))
            db.create_schema()  # (an older server schema is brought up to date in place)
            return db
        if not url.startswith("sqlite"):
            raise ImportError(f"castbench has no driver for {url.split('://', 1)[0]}://")
        if file is None:  # in memory: one database for every thread of this process
            return _current(Database(SQLITE, _sqlite_connect(*_sqlite_target(url)), shared=True))
        missing = file.missing()
        if read_only and missing is not None:
            raise StoreError(f"--db {url}: {missing}")
        problem = file.write_problem()
        if problem is not None and read_only:
            self.writable = False
            db = Database(SQLITE, read_only_connect(file))
            unreadable = readable_schema_problem(db.connection())
            if unreadable is not None:
                raise StoreError(f"--db {url}: {unreadable}")
            return db
        if problem is not None:
            raise StoreError(f"--db {url}: {problem}, and this command writes; use a writable folder")
        folder = file.path.parent
        if not folder.exists() and url != db_url(DEFAULT_DB):  # a mistyped folder is a
            # slip, not a new store: only the default one's folder is made
            raise StoreError(
                f"--db {url}: the folder {folder} does not exist; create it first "
                f"(mkdir -p {folder}) or correct the path"
            )
        folder.mkdir(parents=True, exist_ok=True)
        return _current(Database(SQLITE, _sqlite_connect(*_sqlite_target(url))))

    # -- runs ------------------------------------------------------------------------------
    def open_run(self, config: RunConfig, meta: dict[str, Any], fresh: bool = False) -> tuple[str, bool]:
        """The run for this config: the latest one with the same hash (resumed) unless `fresh`.
        Returns (run id, resumed)."""
        digest = config.config_hash()
        existing = self.runs_of(digest)
        with plain_db_errors(self.url, StoreError):
            if existing and not fresh:
                return existing[-1].id, True
            run_id = f"r-{digest[:12]}" + (f"-{len(existing) + 1}" if existing else "")
            now = _now()
            row = StoredRun(run_id, now, digest, RUN_CONFIG.dumps(config), json.dumps(meta, sort_keys=True))
            try:
                self.add_run(row, updated=now)
            except Exception as exc:
                if not _conflict(exc):
                    raise
                return run_id, True  # another process opened the same run a moment earlier: join it
        return run_id, False

    def runs_of(self, config_hash: str) -> list[StoredRun]:
        """The runs stored with this config hash, oldest first, as stored (`open_run` resumes the
        last); one query on the hash's index, not every run of the store."""
        with plain_db_errors(self.url, StoreError):
            return [
                StoredRun.read(row)
                for row in self.db.execute(
                    f"SELECT {_RUN_COLUMNS} FROM run WHERE config_hash = :digest ORDER BY created",
                    {"digest": config_hash},
                )
            ]

    def add_run(self, row: StoredRun, updated: datetime | None = None) -> None:
        """Store a new run's row (an `IntegrityError` of the driver when its id is taken)."""
        time = self.db.dialect.time
        self.db.execute(
            f"INSERT INTO run ({_RUN_COLUMNS}) "
            "VALUES (:id, :created, :config_hash, :config_json, :meta_json, :status, :updated)",
            {
                "id": row.id,
                "created": time(row.created),
                "config_hash": row.config_hash,
                "config_json": row.config_json,
                "meta_json": row.meta_json,
                "status": row.status,
                "updated": None if updated is None else time(updated),
            },
        )

    def set_config(self, run_id: str, config: RunConfig) -> None:
        """Replace a run's config (and so its identity): only to give it more trials per task."""
        self.update_run(
            run_id, config_json=RUN_CONFIG.dumps(config), config_hash=config.config_hash(), updated=_now()
        )

    def set_status(self, run_id: str, status: str) -> None:
        self.update_run(run_id, status=status, updated=_now())

    def update_run(self, run_id: str, **values: Any) -> None:
        """Set columns of a run's row (`StoreError` for a run that is not there)."""
        time = self.db.dialect.time
        shown = {
            name: time(value) if isinstance(value, datetime) else value for name, value in values.items()
        }
        with plain_db_errors(self.url, StoreError):
            columns = ", ".join(f"{name} = :{name}" for name in values)
            cursor = self.db.execute(
                f"UPDATE run SET {columns} WHERE id = :run_id", {**shown, "run_id": run_id}
            )
            if not cursor.rowcount:
                raise StoreError(f"no run '{run_id}' in {self.url}")

    def runs(self) -> list[StoredRun]:
        """Every run, oldest first, with its true status: a `running` run that no live process
        holds reads as `interrupted`."""
        with plain_db_errors(self.url, StoreError):
            rows = [
                StoredRun.read(row)
                for row in self.db.execute(f"SELECT {_RUN_COLUMNS} FROM run ORDER BY created")
            ]
            leases = {
                run_id: _Lease(host, pid, read_time(beat))  # type: ignore[arg-type]
                for run_id, host, pid, beat in self.db.execute(
                    "SELECT run_id, host, pid, heartbeat FROM run_lease"
                )
            }
        for row in rows:
            if row.status == "running" and not _alive(leases.get(row.id)):
                row.status = "interrupted"
        return rows

    # -- who is running a run ----------------------------------------------------------------
    def hold(self, run_id: str) -> None:
        """Record that this process runs `run_id` (renew with `heartbeat`, end with `release`)."""
        self.lease(run_id, socket.gethostname(), os.getpid(), _now())

    def lease(self, run_id: str, host: str, pid: int, heartbeat: datetime) -> None:
        """Record that process `pid` on `host` runs `run_id`, as of `heartbeat`."""
        with plain_db_errors(self.url, StoreError):
            self.db.execute(
                "INSERT INTO run_lease (run_id, host, pid, heartbeat) VALUES (:run_id, :host, :pid, :beat) "
                "ON CONFLICT (run_id) DO UPDATE SET host = excluded.host, pid = excluded.pid, "
                "heartbeat = excluded.heartbeat",
                {"run_id": run_id, "host": host, "pid": pid, "beat": self.db.dialect.time(heartbeat)},
            )

    def heartbeat(self, run_id: str) -> None:
        """Renew this process's lease on `run_id` (`StoreError` when the database cannot take it)."""
        with plain_db_errors(self.url, StoreError):
            self.db.execute(
                "UPDATE run_lease SET heartbeat = :beat WHERE run_id = :run_id",
                {"beat": self.db.dialect.time(_now()), "run_id": run_id},
            )

    def release(self, run_id: str) -> None:
        with plain_db_errors(self.url, StoreError):
            self.db.execute("DELETE FROM run_lease WHERE run_id = :run_id", {"run_id": run_id})

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
        try:
            found = self.db.one("SELECT value_json FROM cache WHERE key = :key", {"key": key})
        except Exception as exc:
            if not _database_error(exc):
                raise
            return None
        return None if found is None else str(found[0])

    def cache(self, key: str, kind: str, value_json: str) -> None:
        """Keep a derived figure under `key` (a digest of all it depends on). Best effort: a store
        that cannot take it (read-only, another writer's row) only means it is computed again."""
        if not self.writable:
            return
        try:
            self.db.execute(
                "INSERT INTO cache (key, kind, value_json, created) VALUES (:key, :kind, :value, :created) "
                "ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, value_json = excluded.value_json, "
                "created = excluded.created",
                {"key": key, "kind": kind, "value": value_json, "created": self.db.dialect.time(_now())},
            )
        except Exception as exc:
            if not _database_error(exc):
                raise

    # -- trials ----------------------------------------------------------------------------
    def scored_keys(self, run_id: str) -> set[TrialKey]:
        with plain_db_errors(self.url, StoreError):
            found = self.db.execute(
                "SELECT domain, task_id, trial_index FROM trial WHERE run_id = :run_id AND status = 'scored'",
                {"run_id": run_id},
            )
            return {(domain, task, int(index)) for domain, task, index in found}

    def trial_statuses(self, run_id: str) -> dict[TrialKey, str]:
        """The status of each trial stored for `run_id`."""
        with plain_db_errors(self.url, StoreError):
            found = self.db.execute(
                "SELECT domain, task_id, trial_index, status FROM trial WHERE run_id = :run_id",
                {"run_id": run_id},
            )
            return {(domain, task, int(index)): status for domain, task, index, status in found}

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
        conflicts = []
        if rows:
            with self.db.transaction() as execute:
                for index, (record, values) in enumerate(rows):
                    if execute(_INSERT_OR_SKIP, values).rowcount:
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
        key = {
            "run_id": run_id,
            "domain": record.domain,
            "task_id": record.task_id,
            "index": record.trial_index,
        }
        with self.db.transaction() as execute:
            found = execute(
                "SELECT id, status, record_json FROM trial "
                "WHERE run_id = :run_id AND domain = :domain AND task_id = :task_id AND trial_index = :index",
                key,
            ).fetchone()
            if found is not None:
                row_id, status, record_json = found
                if status == "scored":
                    return None
                record = record.model_copy(update={"attempts": record.attempts + _attempts(record_json)})
                execute("DELETE FROM trial WHERE id = :id", {"id": row_id})
            values = _columns(run_id, record)
            execute(_INSERT, values)
        return record, values

    def check_digests(self, run_id: str) -> DigestCheck:
        """Each stored record of `run_id` against the digest castbench kept outside the store
        when it stored it (`castbench._records.store.digests`)."""
        from castbench._records.store.digests import check_digests

        with (
            plain_db_errors(self.url, StoreError),
            self.db.rows(
                "SELECT domain, task_id, trial_index, record_json FROM trial WHERE run_id = :run_id",
                {"run_id": run_id},
                batch=256,  # the rows a batch at a time: a run's records are not held to be hashed (#59)
            ) as rows,
        ):
            return check_digests(self.url, run_id, ((d, t, int(i), j) for d, t, i, j in rows))

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
        with plain_db_errors(self.url, StoreError), self.db.rows(query, values, batch) as rows:
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

    def trials_version(self, run_id: str) -> tuple[int, int]:
        """(trials stored, highest row id) of a run: changes whenever a trial is stored or
        replaced, so what was derived from its trials can be kept under it."""
        count, last = self.db.one(
            "SELECT count(id), max(id) FROM trial WHERE run_id = :run_id", {"run_id": run_id}
        ) or (0, 0)
        return int(count), int(last or 0)

    def count_trials(self, run_id: str) -> int:
        """Counted by the database: `runs list` of 100k-trial runs fetches no row ids."""
        with plain_db_errors(self.url, StoreError):
            (count,) = self.db.one(
                "SELECT count(id) FROM trial WHERE run_id = :run_id", {"run_id": run_id}
            ) or (0,)
        return int(count)


def _current(db: Database) -> Database:
    """`db` with the schema castbench writes (a new database's, or an older one brought up to date)."""
    if not db.current():
        db.create_schema()
    return db


def _remember(url: str) -> None:
    """Record where results are kept (`castbench._base.places`): a SQLite file, a server's TCP port.
    No agent's sandbox reaches a recorded place, whatever it declares."""
    file = sqlite_file(url)
    if file is not None:
        if file.path.exists():
            record_place(file.path)
        return
    server = postgres_url(url)
    if server is None:
        return  # in memory
    try:
        port = urlsplit(server).port or 5432
    except ValueError:
        return
    record_port(port)  # (its unix sockets: the socket filter refuses every AF_UNIX socket)


def last_written(row: StoredRun) -> datetime:
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
