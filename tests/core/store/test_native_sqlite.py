"""A SQLite store read and written with `sqlite3` (#59) is the store SQLAlchemy makes and reads."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from sqlmodel import Session, SQLModel, create_engine, select

import castbench._records.store.tables  # noqa: F401  the tables SQLModel's metadata creates
from castbench._records.store import ResultsStore
from castbench._records.store.tables import RunRow
from tests.support import sqlite_url


def _schema(path: Path) -> list[tuple[str, str, str, str | None]]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
        return list(rows)


def test_a_new_file_gets_the_schema_sqlalchemy_creates(tmp_path: Path) -> None:
    ResultsStore(sqlite_url(tmp_path / "native.db"))
    SQLModel.metadata.create_all(create_engine(sqlite_url(tmp_path / "sqlalchemy.db")))
    native = _schema(tmp_path / "native.db")
    assert native == _schema(tmp_path / "sqlalchemy.db")
    assert {name for kind, name, _, _ in native if kind == "table"} == {
        "run",
        "trial",
        "worker",
        "claim",
        "run_lease",
        "cache",
    }


def test_rows_written_with_sqlite3_read_back_through_sqlmodel(tmp_path: Path) -> None:
    from castbench._records.config import RunConfig

    store = ResultsStore(sqlite_url(tmp_path / "r.db"))
    assert "engine" not in vars(store)  # no SQLAlchemy engine was needed
    config = RunConfig(domains={"retail": "1"}, split="test", policy="oracle", trials=1)
    before = datetime.now(UTC)
    run_id, resumed = store.open_run(config, {"note": 1})
    store.set_status(run_id, "complete")
    assert not resumed and store.open_run(config, {}) == (run_id, True)
    with Session(store.engine) as session:
        row = session.exec(select(RunRow)).one()
    native = store.run(run_id)
    assert (row.id, row.status, row.config_hash, row.meta_json) == (
        native.id,
        native.status,
        native.config_hash,
        native.meta_json,
    )
    assert row.created == native.created and row.updated == native.updated
    assert before <= native.created <= native.updated <= datetime.now(UTC)
