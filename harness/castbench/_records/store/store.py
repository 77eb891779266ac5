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
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event, func, inspect, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, SQLAlchemyError
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, SQLModel, col, create_engine, select

from castbench._base.defaults import DEFAULT_DB
from castbench._base.places import record_place, record_port
from castbench._records.config import RUN_CONFIG, RunConfig, read_config
from castbench._records.migrations import RecordVersionError
from castbench._records.store.access import read_only_engine, readable_schema_problem, sqlite_file
from castbench._records.store.connect import db_url, plain_db_errors
from castbench._records.store.digests import DigestCheck, check_digests, record_digests
from castbench._records.store.tables import CacheRow, RunLease, RunRow, TrialRow
from castbench._records.trial import TRIAL_RECORD, TrialRecord

__all__ = ["DEFAULT_DB", "HEARTBEAT_S", "ResultsStore", "StoreError", "TrialKey", "last_written"]

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
_INSERT_OR_SKIP = text(
    f"INSERT INTO trial ({', '.join(_COLUMNS)}) VALUES ({', '.join(':' + c for c in _COLUMNS)}) "
    "ON CONFLICT DO NOTHING"
)
"""The hot path of a run, one statement per trial (SQLite and Postgres)."""


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
        "record_json": TRIAL_RECORD.dumps(record),
    }


class StoreError(LookupError):
    pass


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
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


def _add_missing_columns(engine: Engine) -> None:
    """(Postgres workers may open a store at once: there the statement tolerates a lost race.)"""
    guard = " IF NOT EXISTS" if engine.dialect.name == "postgresql" else ""
    inspector = inspect(engine)
    for table, columns in _ADDED_COLUMNS.items():
        have = {column["name"] for column in inspector.get_columns(table)}
        with engine.begin() as connection:
            for name, kind in columns.items():
                if name not in have:
                    connection.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN{guard} {name} {kind}")


class ResultsStore:
    def __init__(self, url: str = DEFAULT_DB, read_only: bool = False) -> None:
        """`url`: a SQLAlchemy URL or a plain path to a SQLite file. `StoreError` (one line that
        names the problem and the fix) when it cannot be opened. An empty `url` is refused: it
        would mean an in-memory database, and the run would be lost on exit (ask for that with
        `sqlite://`).

        `read_only`: the caller only reads (`runs`, `compare`, `export`, `view`, `gate`). A SQLite
        file that cannot be written is then opened read-only and nothing is written to it or
        beside it (`castbench._records.store.access`); without `read_only` such a file is refused before
        any work. A missing file is never created for a reader."""
        if not url.strip():
            raise StoreError("--db is empty: give a SQLite file path or a database URL")
        url = db_url(url)
        self.url = url
        self._sqlite = url.startswith("sqlite")
        self.shared = url.startswith(_POSTGRES_SCHEMES) or url.startswith("postgresql+")
        """Several processes may work on one run (trials are claimed with leases)."""
        self.writable = True
        """False for a SQLite file opened read-only: derived figures are not kept (`cache`)."""
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
            if in_memory_url(url):  # one database for every thread of this process (the commit
                # thread included): SQLite gives each new connection an empty one of its own
                self.engine = create_engine(
                    engine_url(url), poolclass=StaticPool, connect_args={"check_same_thread": False}
                )
            else:
                self.engine = create_engine(engine_url(url), pool_pre_ping=self.shared)
            if self._sqlite:
                _sqlite_pragmas(self.engine)
            if self.engine.dialect.name == "postgresql":
                _create_postgres_schema(self.engine)
            else:
                SQLModel.metadata.create_all(self.engine)
            _add_missing_columns(self.engine)
        _remember(url)  # a SQLite file exists now

    # -- runs ------------------------------------------------------------------------------
    def open_run(self, config: RunConfig, meta: dict[str, Any], fresh: bool = False) -> tuple[str, bool]:
        """The run for this config: the latest one with the same hash (resumed) unless `fresh`.
        Returns (run id, resumed)."""
        digest = config.config_hash()
        with plain_db_errors(self.url, StoreError), Session(self.engine) as session:
            existing = session.exec(
                select(RunRow).where(RunRow.config_hash == digest).order_by(RunRow.created)  # type: ignore[arg-type]
            ).all()
            if existing and not fresh:
                return existing[-1].id, True
            run_id = f"r-{digest[:12]}" + (f"-{len(existing) + 1}" if existing else "")
            now = datetime.now(UTC)
            session.add(
                RunRow(
                    id=run_id,
                    created=now,
                    updated=now,
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
        with Session(self.engine) as session:
            row = session.get(RunRow, run_id)
            if row is None:
                raise StoreError(f"no run '{run_id}' in {self.url}")
            row.config_json = RUN_CONFIG.dumps(config)
            row.config_hash = config.config_hash()
            row.updated = datetime.now(UTC)
            session.add(row)
            session.commit()

    def set_status(self, run_id: str, status: str) -> None:
        with plain_db_errors(self.url, StoreError), Session(self.engine) as session:
            row = session.get(RunRow, run_id)
            if row is None:
                raise StoreError(f"no run '{run_id}' in {self.url}")
            row.status = status
            row.updated = datetime.now(UTC)
            session.add(row)
            session.commit()

    def runs(self) -> list[RunRow]:
        """Every run, oldest first, with its true status: a `running` run that no live process
        holds reads as `interrupted`."""
        with plain_db_errors(self.url, StoreError), Session(self.engine) as session:
            rows = list(session.exec(select(RunRow).order_by(RunRow.created)).all())  # type: ignore[arg-type]
            leases = {lease.run_id: lease for lease in session.exec(select(RunLease)).all()}
        for row in rows:
            if row.status == "running" and not _alive(leases.get(row.id)):
                row.status = "interrupted"
        return rows

    # -- who is running a run ----------------------------------------------------------------
    def hold(self, run_id: str) -> None:
        """Record that this process runs `run_id` (renew with `heartbeat`, end with `release`)."""
        lease = RunLease(run_id=run_id, host=socket.gethostname(), pid=os.getpid(), heartbeat=_now())
        with plain_db_errors(self.url, StoreError), Session(self.engine) as session:
            session.merge(lease)
            session.commit()

    def heartbeat(self, run_id: str) -> None:
        self._update_lease(run_id, renew=True)

    def release(self, run_id: str) -> None:
        self._update_lease(run_id, renew=False)

    def _update_lease(self, run_id: str, renew: bool) -> None:
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

    def run(self, ref: str) -> RunRow:
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
        try:
            with Session(self.engine) as session:
                session.merge(CacheRow(key=key, kind=kind, value_json=value_json, created=_now()))
                session.commit()
        except SQLAlchemyError:
            pass

    # -- trials ----------------------------------------------------------------------------
    def scored_keys(self, run_id: str) -> set[TrialKey]:
        with plain_db_errors(self.url, StoreError), Session(self.engine) as session:
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
        if rows and self.engine.dialect.name in ("sqlite", "postgresql"):
            conflicts = []
            with self.engine.begin() as connection:
                for index, (record, values) in enumerate(rows):
                    if connection.execute(_INSERT_OR_SKIP, values).rowcount:
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
                record = record.model_copy(update={"attempts": record.attempts + _attempts(existing)})
                session.delete(existing)
                session.flush()
            values = _columns(run_id, record)
            session.add(TrialRow(**values))
            session.commit()
        return record, values

    def check_digests(self, run_id: str) -> DigestCheck:
        """Each stored record of `run_id` against the digest castbench kept outside the store
        when it stored it (`castbench._records.store.digests`)."""
        columns = (TrialRow.domain, TrialRow.task_id, TrialRow.trial_index, TrialRow.record_json)
        with plain_db_errors(self.url, StoreError), Session(self.engine) as session:
            # the rows a batch at a time: a run's records are not held to be hashed (#59)
            rows = (
                session.connection()
                .execution_options(yield_per=256)
                .execute(select(*columns).where(TrialRow.run_id == run_id))
            )
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
        columns = (TrialRow.domain, TrialRow.task_id, TrialRow.trial_index, TrialRow.record_json)
        query = select(*columns).where(TrialRow.run_id == run_id)
        if domains is not None:
            query = query.where(TrialRow.domain.in_(list(domains)))  # type: ignore[attr-defined]
        if task_id is not None:
            query = query.where(TrialRow.task_id == task_id)
        if trial_index is not None:
            query = query.where(TrialRow.trial_index == trial_index)
        query = query.order_by(col(TrialRow.domain), col(TrialRow.task_id), col(TrialRow.trial_index))
        read, unreadable = 0, []
        with plain_db_errors(self.url, StoreError), Session(self.engine) as session:
            result = session.connection().execution_options(yield_per=batch).execute(query)
            for domain, task, index, record_json in result:
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
        with Session(self.engine) as session:
            query = select(func.count(col(TrialRow.id)), func.max(col(TrialRow.id)))
            count, last = session.exec(query.where(TrialRow.run_id == run_id)).one()
        return int(count), int(last or 0)

    def count_trials(self, run_id: str) -> int:
        """Counted by the database: `runs list` of 100k-trial runs fetches no row ids."""
        with plain_db_errors(self.url, StoreError), Session(self.engine) as session:
            query = select(func.count(col(TrialRow.id))).where(TrialRow.run_id == run_id)
            return int(session.exec(query).one())


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
    try:
        parsed = make_url(url)
    except ArgumentError:
        return
    defaults = {"postgresql": 5432, "mysql": 3306}
    port = parsed.port or defaults.get(parsed.get_backend_name())
    if port is not None:  # (its unix sockets: the socket filter refuses every AF_UNIX socket)
        record_port(port)


def last_written(row: RunRow) -> datetime:
    when = row.updated or row.created
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _attempts(row: TrialRow) -> int:
    return int(json.loads(row.record_json).get("attempts", 1))


def _now() -> datetime:
    return datetime.now(UTC)


def _alive(lease: RunLease | None) -> bool:
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
