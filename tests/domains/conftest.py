"""`db`: a fresh database of the domain whose folder the test lives in (`tests/domains/<name>/`)."""

from __future__ import annotations

import pytest

from castbench.domain import Database, load_domain


@pytest.fixture
def db(request: pytest.FixtureRequest) -> Database:
    return load_domain(request.path.parent.name).fresh_database()
