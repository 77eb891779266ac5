"""A throwaway Postgres server for the tests that need one (the store's, and the shared-store
placement's; one per test module)."""

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
