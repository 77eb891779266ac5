"""Shared test setup: offline, and the repository root importable.

The repository root goes on `sys.path` so that test-only agents can be named the way a team names
its own (`--policy tests.core.fixtures_agents:TeamPolicy`), in process and in subprocesses (which
get it through PYTHONPATH, see `repo_env`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


@pytest.fixture
def repo_env() -> dict[str, str]:
    """Environment for a subprocess that must import test modules and stay offline."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["COLUMNS"] = "200"
    env.pop("CASTBENCH_DB", None)
    return env
