"""`castbench.evaluate` is the Python entry point the docs promise, and importing castbench (as
every agent worker and `castbench --help` does) does not import the evaluation machinery."""

from __future__ import annotations

import subprocess
import sys

import castbench
from castbench._run import api


def test_castbench_evaluate_is_the_api_entry_point() -> None:
    assert castbench.evaluate is api.evaluate
    assert "evaluate" in castbench.__all__


def test_importing_castbench_loads_no_evaluation_machinery(repo_env: dict[str, str]) -> None:
    probe = "import castbench, sys; print(sorted(m for m in sys.modules if m.startswith('castbench.')))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], env=repo_env, capture_output=True, text=True, check=True
    )
    # the public modules' helpers only: how a name loads on first use, and the old paths' finder
    assert loaded.stdout.strip() == str(["castbench._legacy", "castbench._public"])
