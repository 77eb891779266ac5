"""Start-up: commands import only what they need (`castbench/cli/app.py`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from castbench.cli.app import COMMANDS, load_command

HEAVY = ("litellm", "openai", "pandas", "scipy", "jinja2", "sqlalchemy", "sqlmodel", "numpy")

_PROBE = """
import json, sys
from castbench.cli.app import main
sys.argv = ["castbench", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print("LOADED=" + json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(%s))))
"""


def _loaded(args: list[str], env: dict[str, str], cwd: Path) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE % (HEAVY,), json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    line = next(line for line in result.stdout.splitlines() if line.startswith("LOADED="))
    return set(json.loads(line.removeprefix("LOADED=")))


def test_help_imports_no_heavy_package(repo_env: dict[str, str], tmp_path: Path) -> None:
    assert _loaded(["--help"], repo_env, tmp_path) == set()


def test_oracle_eval_loads_no_model_client_nor_templates(repo_env: dict[str, str], tmp_path: Path) -> None:
    args = ["eval", "--domain", "retail", "--policy", "oracle", "--trials", "1"]
    args += ["--tasks", "retail-test-0001", "--db", f"sqlite:///{tmp_path / 'r.db'}"]
    loaded = _loaded(args, repo_env, tmp_path)
    assert "sqlalchemy" in loaded  # it did run and store
    assert loaded.isdisjoint({"litellm", "openai", "pandas", "scipy", "jinja2"})


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_listed_help_is_the_start_of_the_commands_own(name: str) -> None:
    entry = COMMANDS[name]
    real = " ".join((load_command(name, entry).help or "").split())
    assert real.startswith(entry.help.removesuffix(" ...")), (name, real)
