"""A throwaway Postgres server for the store tests that need one (one per test module)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.postgres import PostgresUnavailable, postgres_server


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    pytest.importorskip("psycopg", reason="the Postgres driver: pip install 'castbench[postgres]'")
    try:
        with postgres_server() as url:
            yield url
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
