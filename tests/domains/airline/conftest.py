from __future__ import annotations

import pytest

from castbench.domain import Database, Domain, load_domain


@pytest.fixture(scope="session")
def airline() -> Domain:
    return load_domain("airline")


@pytest.fixture
def db(airline: Domain) -> Database:
    return airline.fresh_database()
