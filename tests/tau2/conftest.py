"""The τ² packs need the `tau2` extra (`pip install -e '.[tau2]'`), which CI installs: these tests
fail, not skip, without it."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench.domain import load_domain  # noqa: E402
from castbench_tau2.domain import Tau2Domain  # noqa: E402

PACKS = ["tau2-retail", "tau2-airline"]


@pytest.fixture(scope="session", params=PACKS)
def pack(request: pytest.FixtureRequest) -> Tau2Domain:
    domain = load_domain(request.param)
    assert isinstance(domain, Tau2Domain)
    return domain


def pytest_configure(config: pytest.Config) -> None:
    # pydantic's notes on litellm's own TypedDicts, printed when litellm is imported
    config.addinivalue_line("filterwarnings", "ignore:.*ReadOnly. qualifier:UserWarning")
