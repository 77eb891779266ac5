from __future__ import annotations

import pytest

from castbench.domain import Database, Domain, load_domain


@pytest.fixture(scope="session")
def retail() -> Domain:
    return load_domain("retail")


@pytest.fixture
def db(retail: Domain) -> Database:
    return retail.fresh_database()
