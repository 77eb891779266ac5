#!/usr/bin/env python3
"""Install castbench into a virtual environment, hold it to its static checks and run its tests:
README.md's test command and what CI (`.ci/run`) runs on a clean clone.

    python3 scripts/check.py               # what CI runs: every extra, the static checks, every test
    python3 scripts/check.py --lean        # `.[test]` only, in .venv-lean; the core tests (`-m core`)
    python3 scripts/check.py -- -x tests/cli   # anything after `--` goes to pytest

Why a script: the command it replaces was one shell line of six steps (venv, llama.cpp, pip, ruff,
lint-imports, mypy, pytest) that README.md and `.ci/run` each held a copy of, and a reader had to
find which parts they could leave out. Here the steps are named once, the lean path is one flag,
and the wall and CPU time of each phase (install, static checks, tests) is printed at the end, on a
failure too, so every CI log says where its time went (docs/development.md keeps the reference
figures). It uses only the standard library: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Every extra of pyproject.toml but `vllm` (a GPU serving stack no test needs): the full run tests
# every pack, bridge and backend (tests/cli/test_check_script.py holds this list to pyproject's).
FULL_EXTRAS = ["test", "llamacpp", "postgres", "tau", "tau2", "ray", "train", "service", "bridges", "boards"]
LEAN_EXTRAS = ["test"]
# The tests that need no extra and are not marked slow (tests/conftest.py marks them `core`).
LEAN_SELECTION = ["-m", "core"]


@dataclass
class Phase:
    """One timed phase: its name in the summary and the commands it runs, in order."""

    name: str
    commands: list[list[str]] = field(default_factory=list)


def plan(lean: bool, venv: Path, pytest_args: list[str]) -> list[Phase]:
    """The phases a check runs, each command an argv run in the repository's root."""
    python, bin_dir = str(venv / "bin" / "python"), venv / "bin"
    extras = LEAN_EXTRAS if lean else FULL_EXTRAS
    install = Phase("install", [[sys.executable, "-m", "venv", str(venv)]])
    if not lean:
        # llama-cpp-python compiled portably first (its wheel cached per machine), so that pip's
        # install of the `llamacpp` extra below finds it instead of building a native one
        install.commands.append([python, "scripts/install_llama_cpp.py"])
    # --no-compile: pip would compile every module of every package, half of the install's time;
    # the tests compile what they import, once (tests/conftest.py)
    install.commands.append(
        [python, "-m", "pip", "install", "-q", "--no-compile", "-e", f".[{','.join(extras)}]"]
    )
    static = Phase(
        "static checks",
        [[str(bin_dir / "ruff"), "check", "."], [str(bin_dir / "lint-imports")], [str(bin_dir / "mypy")]],
    )
    selection = LEAN_SELECTION if lean else []
    tests = Phase("tests", [[str(bin_dir / "pytest"), *selection, *pytest_args]])
    return [install, static, tests]


def _children_cpu() -> float:
    """CPU seconds used so far by the processes this one waited for (and theirs)."""
    times = os.times()
    return times.children_user + times.children_system


def summary(times: dict[str, tuple[float, float]]) -> str:
    """`check: phase wall times: install 312 s (CPU 280 s) · ... · total 1090 s (CPU 1800 s)`: on
    a shared machine the wall time says how busy it was as much as how long the check takes; the
    CPU time over the cores is what a quiet machine would take at best."""
    parts = [f"{name} {wall:.0f} s (CPU {cpu:.0f} s)" for name, (wall, cpu) in times.items()]
    wall, cpu = sum(w for w, _ in times.values()), sum(c for _, c in times.values())
    parts.append(f"total {wall:.0f} s (CPU {cpu:.0f} s)")
    return "check: phase wall times: " + " · ".join(parts)


def run(phases: list[Phase]) -> int:
    """Run each phase's commands in turn, stopping at the first that fails; print the phases'
    wall and CPU times at the end whatever happened, and return the failed command's exit status."""
    times: dict[str, tuple[float, float]] = {}
    status = 0
    try:
        for phase in phases:
            start, start_cpu = time.monotonic(), _children_cpu()
            try:
                for command in phase.commands:
                    print(f"check: {phase.name}: {' '.join(command)}", flush=True)
                    status = subprocess.run(command, cwd=ROOT).returncode
                    if status != 0:
                        print(
                            f"error: {phase.name} failed: `{' '.join(command)}` exited {status}", flush=True
                        )
                        return status
            finally:
                times[phase.name] = (time.monotonic() - start, _children_cpu() - start_cpu)
        return 0
    except KeyboardInterrupt:
        print("error: interrupted", flush=True)
        return 130
    finally:
        print(summary(times), flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    pytest_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, pytest_args = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(prog="scripts/check.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--lean",
        action="store_true",
        help="install `.[test]` only (into .venv-lean unless --venv), run the core tests (`pytest -m core`)",
    )
    parser.add_argument(
        "--venv", type=Path, help="the virtual environment to make or reuse (.venv; .venv-lean with --lean)"
    )
    args = parser.parse_args(argv)
    venv = args.venv or Path(".venv-lean" if args.lean else ".venv")
    return run(plan(args.lean, ROOT / venv, pytest_args))


if __name__ == "__main__":
    sys.exit(main())
