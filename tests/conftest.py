"""Shared test setup: offline, and the repository root importable.

The repository root goes on `sys.path` so that test-only agents can be named the way a team names
its own (`--policy tests.core.fixtures_agents:TeamPolicy`), in process and in subprocesses (which
get it through PYTHONPATH, see `repo_env`).
"""

from __future__ import annotations

import importlib
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


@pytest.fixture(scope="session", autouse=True)
def _command_modules_loaded() -> None:
    """`castbench` imports a command's module when the command first runs (`castbench.cli.app`),
    and rich fixes a console's width from COLUMNS when the console is made (at that import). Tests
    run many commands in one process, each with its own COLUMNS (CliRunner's env): loading every
    command module up front keeps each console's width following the invocation's COLUMNS."""
    from castbench.cli.app import COMMANDS

    for entry in COMMANDS.values():
        importlib.import_module(entry.target.split(":")[0])
