from __future__ import annotations

import pytest

from castbench.domain import Database, Domain, load_domain


@pytest.fixture(scope="session")
def telehealth() -> Domain:
    return load_domain("telehealth")


@pytest.fixture
def db(telehealth: Domain) -> Database:
    return telehealth.fresh_database()
