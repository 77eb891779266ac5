"""What differs between SQLite and Postgres is one `Dialect`: the SQL written once with `:name`
parameters reaches psycopg in its style; a server store's URL is read without SQLAlchemy, as
SQLAlchemy read it (the digests kept under a store's identity still apply)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from castbench._records.store.connect import describe_db_error, postgres_url, server_location
from castbench._records.store.database import _SCHEMA, POSTGRES, SQLITE, _if_not_exists, read_time


def test_named_parameters_become_psycopg_s_and_percent_signs_stay_literal() -> None:
    query = (
        "SELECT a FROM t WHERE x = :run_id AND y LIKE '%x%' AND z = :z_1 AND w = 'a:b' AND v = now()::text"
    )
    assert POSTGRES.sql(query) == (
        "SELECT a FROM t WHERE x = %(run_id)s AND y LIKE '%%x%%' AND z = %(z_1)s AND w = 'a:b' "
        "AND v = now()::text"
    )
    assert SQLITE.sql(query) == query


def test_times_are_kept_as_each_backend_keeps_them() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=2)))
    assert SQLITE.time(when) == "2026-01-02 01:04:05.000006"  # UTC text, as SQLAlchemy wrote it
    assert POSTGRES.time(when) is when
    assert read_time("2026-01-02 01:04:05.000006") == when
    assert read_time(datetime(2026, 1, 2, 1, 4, 5, 6)) == when  # a column without a zone: UTC
    assert read_time(None) is None and read_time(when.astimezone(UTC)) == when


def test_the_schema_differs_by_types_only() -> None:
    sqlite = [_if_not_exists(statement.format(**SQLITE.types)) for statement in _SCHEMA]
    postgres = [_if_not_exists(statement.format(**POSTGRES.types)) for statement in _SCHEMA]
    assert all(s.startswith(("CREATE TABLE IF NOT EXISTS ", "CREATE INDEX IF NOT EXISTS ")) for s in sqlite)
    assert "id SERIAL NOT NULL" in postgres[3] and "id INTEGER NOT NULL" in sqlite[3]
    assert "created TIMESTAMP WITHOUT TIME ZONE NOT NULL" in postgres[0]
    assert "heartbeat TIMESTAMP WITH TIME ZONE NOT NULL" in postgres[-1]


@pytest.mark.parametrize(
    ("url", "libpq", "location"),
    [
        (
            "postgresql://castbench:se%40cret@db.internal:5432/results",
            "postgresql://castbench:se%40cret@db.internal:5432/results",
            "postgresql://castbench@db.internal:5432/results",
        ),
        ("postgres://u@h/db", "postgresql://u@h/db", "postgres://u@h:/db"),
        ("postgresql+psycopg://u@h:6000/db", "postgresql://u@h:6000/db", "postgresql://u@h:6000/db"),
    ],
)
def test_a_server_url_is_read_as_sqlalchemy_read_it(url: str, libpq: str, location: str) -> None:
    assert postgres_url(url) == libpq
    assert server_location(url) == location
    assert postgres_url("sqlite:///x.db") is None and postgres_url("mysql://h/db") is None


def test_an_error_line_hides_the_password_and_names_the_backends() -> None:
    line = describe_db_error("postgresql://u:secret@h:9/db", OSError("connection refused"))
    assert "secret" not in line and "u:***@h:9/db" in line and "cannot reach the database server" in line
    unknown = describe_db_error("nosuchdb://x/y", ImportError("castbench has no driver for nosuchdb://"))
    assert "driver is not installed" in unknown and "PostgreSQL (postgresql://...)" in unknown
