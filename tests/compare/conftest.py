"""Real runs of the scripted noisy policy, made once per session, for the comparison and gate
tests: the full retail test split × 8 trials takes a few seconds per run."""

from __future__ import annotations

import pytest

from tests.compare.stored_runs import Runs, make_runs


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return make_runs(tmp_path_factory.mktemp("compare-runs"))
