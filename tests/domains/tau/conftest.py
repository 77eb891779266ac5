"""The τ packs need the `tau` extra (`pip install -e '.[tau]'`, which CI installs)."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

if find_spec("tau_trait") is None:  # importing it needs an API key: only look it up
    pytest.skip("the τ packs need pip install -e '.[tau]'", allow_module_level=True)

from castbench.domain import load_domain  # noqa: E402
from castbench_tau.domain import TauDomain  # noqa: E402

PACKS = ["tau-retail", "tau-airline", "tau-telecom", "tau-telehealth"]


@pytest.fixture(scope="session", params=PACKS)
def pack(request: pytest.FixtureRequest) -> TauDomain:
    domain = load_domain(request.param)
    assert isinstance(domain, TauDomain)
    return domain


@pytest.fixture(scope="session")
def packs() -> dict[str, TauDomain]:
    return {name: load_domain(name) for name in PACKS}  # type: ignore[misc]


def pytest_configure(config: pytest.Config) -> None:
    # pydantic's notes on litellm's own TypedDicts, printed when litellm is imported
    config.addinivalue_line("filterwarnings", "ignore:.*ReadOnly. qualifier:UserWarning")
