from __future__ import annotations

import pytest

from castbench.domain import Database, Domain, load_domain


@pytest.fixture(scope="session")
def telecom() -> Domain:
    return load_domain("telecom")


@pytest.fixture
def db(telecom: Domain) -> Database:
    return telecom.fresh_database()
