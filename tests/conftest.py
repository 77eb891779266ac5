"""Shared test setup: offline, the repository root importable, and the fixtures every folder uses.

The repository root goes on `sys.path` so that test-only agents can be named the way a team names
its own (`--policy tests.core.fixtures_agents:TeamPolicy`), in process and in subprocesses (which
get it through PYTHONPATH, see `repo_env`).

Domain fixtures: `domain` runs a test once per built-in domain; `retail`, `airline`, `telecom` and
`telehealth` name one. Domains are loaded once per process (`load_domain` caches them).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from functools import cache
from importlib.util import find_spec
from pathlib import Path

import pytest
from hypothesis import settings

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS = REPO_ROOT / "tests"

# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE, set on this
# project's CI machine): the suite starts many Python processes (xdist workers, CLI subprocesses,
# agent and Ray workers), and each would otherwise compile castbench, the tests and every library
# it imports from source at each import. The test command (scripts/check.py) installs with `pip
# install --no-compile`: the first process to import a module compiles it for all the others, and modules
# no test imports are never compiled. With the variable set, the suite took 735 s instead of 516 s.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Each command's width comes from its invocation (`tests.support.invoke` sets COLUMNS): a COLUMNS
# inherited from outside (pytest-xdist's workers get COLUMNS=80) would fix every rich console at
# that width when its module is imported.
os.environ.pop("COLUMNS", None)
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from castbench.domain import Domain, load_domain  # noqa: E402
from tests.support import DOMAINS, sqlite_url  # noqa: E402

# No per-example deadline: on a loaded machine one example of a cheap property took 380 ms and
# failed the suite as "flaky"; a property that is too slow is still stopped by pytest-timeout.
settings.register_profile("castbench", deadline=None)
settings.load_profile("castbench")

# The optional extras of pyproject.toml a test can need, each by the modules that are there only
# when it is installed. A test needing one is marked `extra("name")` (a whole folder's by
# FOLDER_EXTRAS below, the Postgres tests by their `postgres` fixture, the older `model`, `ray`
# and `train` markers by MARKER_EXTRAS); where one is missing it is skipped, naming the pip
# command, and every other test that is not slow is marked `core`: `pip install -e '.[test]'`
# and `pytest -m core` is the lean test path (`scripts/check.py --lean`, docs/development.md).
EXTRAS = {
    "postgres": ("psycopg",),
    "llamacpp": ("llama_cpp",),
    "tau": ("tau_trait",),
    "tau2": ("tau2",),
    "ray": ("ray",),
    "train": ("torch", "transformers", "trl", "peft", "datasets", "accelerate"),
    "service": ("mcp", "httptools", "openenv"),
    "bridges": ("a2a", "inspect_ai", "mcp"),
}
MARKER_EXTRAS = {"model": "llamacpp", "ray": "ray", "train": "train"}
# folders of a pack or plugin whose every test needs its extra (relative to tests/)
FOLDER_EXTRAS = {"cast": "train", "domains/tau": "tau", "tau2": "tau2"}


@cache
def _missing(extra: str) -> list[str]:
    """The modules of `extra` that are not installed (looked up, not imported: importing
    tau_trait needs an API key, and torch takes seconds). A folder of tests on the path is a
    namespace package of its name (tests/tau2 is `tau2` without the τ² package): not one."""
    return [module for module in EXTRAS[extra] if (spec := find_spec(module)) is None or spec.origin is None]


def _extras_of(item: pytest.Item) -> list[str]:
    """The extras a test needs, in the order they are named."""
    names: list[str] = []
    for marker in item.iter_markers("extra"):
        unknown = [name for name in marker.args if name not in EXTRAS]
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: extra({', '.join(unknown)}) names no extra of tests/conftest.py EXTRAS"
            )
        names.extend(marker.args)
    names.extend(extra for marker, extra in MARKER_EXTRAS.items() if item.get_closest_marker(marker))
    folder = Path(item.path).parent
    names.extend(extra for prefix, extra in FOLDER_EXTRAS.items() if folder.is_relative_to(TESTS / prefix))
    if "postgres" in getattr(item, "fixturenames", ()):
        names.append("postgres")
    return list(dict.fromkeys(names))


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by the markers added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test `core` or skip it when an extra it needs is missing (see EXTRAS)."""
    for item in items:
        extras = _extras_of(item)
        missing = [extra for extra in extras if _missing(extra)]
        if missing:
            modules = ", ".join(module for extra in missing for module in _missing(extra))
            install = f"pip install -e '.[{','.join(missing)}]'"
            item.add_marker(
                pytest.mark.skip(
                    reason=f"needs the {', '.join(missing)} extra ({modules} missing): {install}"
                )
            )
        if not extras and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.core)


@pytest.fixture(scope="session", params=DOMAINS)
def domain(request: pytest.FixtureRequest) -> Domain:
    """Each built-in domain in turn."""
    return load_domain(request.param)


def _one_domain(name: str) -> Callable[[], Domain]:
    @pytest.fixture(scope="session", name=name)
    def fixture() -> Domain:
        return load_domain(name)

    fixture.__doc__ = f"The built-in {name} domain."
    return fixture


airline, retail, telecom, telehealth = (_one_domain(name) for name in DOMAINS)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh SQLite store for one test."""
    return sqlite_url(tmp_path / "runs.db")


@pytest.fixture(autouse=True)
def _fresh_recorders() -> Iterator[None]:
    """Test agents that keep what they saw in class-level lists start every test empty, so no
    test reads another's instances (a module-scoped fixture that records keeps its own copy)."""
    from tests.core.fixtures_agents import RecordingCritic, RecordingPolicy
    from tests.critic.recording import RecordingCritic as CriticTestsCritic
    from tests.critic.recording import RecordingOraclePolicy, RejectAllCritic

    for recorder in (RecordingCritic, RecordingPolicy, CriticTestsCritic, RecordingOraclePolicy):
        recorder.instances.clear()
    RejectAllCritic.calls = 0
    yield


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
    """`castbench` imports a command's module when the command first runs (`castbench._cli.app`),
    and rich fixes a console's width from COLUMNS when the console is made (at that import). Tests
    run many commands in one process, each with its own COLUMNS (CliRunner's env): loading every
    command module up front keeps each console's width following the invocation's COLUMNS."""
    from castbench._cli.app import COMMANDS, plugin_commands

    for entry in COMMANDS.values():
        importlib.import_module(entry.target.split(":")[0])
    plugin_commands()  # the satellites' and plugins' command modules (`castbench.commands`)
