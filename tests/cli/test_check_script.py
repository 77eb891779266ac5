"""`scripts/check.py`, the one test command (README.md, "Run the tests"; `.ci/run`): it installs
every extra CI tests, runs the static checks and the suite, and prints each phase's wall time
whatever happened; `--lean` installs `.[test]` only and runs the core tests. And the marker
scheme the lean path selects by (tests/conftest.py): a test that needs an extra is never `core`."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_script", ROOT / "scripts" / "check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


check = _check()


def test_the_full_check_installs_every_extra_but_vllm() -> None:
    """A new extra in pyproject.toml is tested by CI only once the script installs it."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert sorted(check.FULL_EXTRAS) == sorted(set(extras) - {"vllm"})


def test_the_full_plan_is_what_ci_ran_before() -> None:
    venv = ROOT / ".venv"
    install, static, tests = check.plan(False, venv, ["-x", "tests/cli"])
    python = str(venv / "bin" / "python")
    assert install.commands == [
        [sys.executable, "-m", "venv", str(venv)],
        [python, "scripts/install_llama_cpp.py"],
        [python, "-m", "pip", "install", "-q", "--no-compile", "-e", f".[{','.join(check.FULL_EXTRAS)}]"],
    ]
    assert [Path(command[0]).name for command in static.commands] == ["ruff", "lint-imports", "mypy"]
    assert static.commands[0][1:] == ["check", "."]
    assert tests.commands == [[str(venv / "bin" / "pytest"), "-x", "tests/cli"]]


def test_the_lean_plan_installs_the_test_extra_only_and_selects_the_core() -> None:
    venv = ROOT / ".venv-lean"
    install, _, tests = check.plan(True, venv, [])
    assert not any("install_llama_cpp" in " ".join(command) for command in install.commands)
    assert install.commands[-1][-2:] == ["-e", ".[test]"]
    assert tests.commands == [[str(venv / "bin" / "pytest"), "-m", "core"]]


def test_a_failed_phase_stops_the_check_and_every_phase_run_is_timed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    never = tmp_path / "never"
    phases = [
        check.Phase("install", [[sys.executable, "-c", "pass"]]),
        check.Phase("static checks", [[sys.executable, "-c", "raise SystemExit(3)"]]),
        check.Phase("tests", [[sys.executable, "-c", f"open({str(never)!r}, 'w')"]]),
    ]
    assert check.run(phases) == 3
    assert not never.exists()
    out = capsys.readouterr().out
    assert "error: static checks failed:" in out and "exited 3" in out
    summary = out.splitlines()[-1]
    assert re.fullmatch(
        r"check: phase wall times: install \d+ s \(CPU \d+ s\) · static checks \d+ s \(CPU \d+ s\) · "
        r"total \d+ s \(CPU \d+ s\)",
        summary,
    )


def test_arguments_after_a_double_dash_go_to_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    planned: list[list[str]] = []
    monkeypatch.setattr(check, "run", lambda phases: planned.extend(phases[-1].commands) or 0)
    assert check.main(["--lean", "--venv", "/tmp/v", "--", "-x", "-k", "lean"]) == 0
    assert planned == [["/tmp/v/bin/pytest", "-m", "core", "-x", "-k", "lean"]]


def test_readme_and_ci_run_the_script() -> None:
    """README's test command is one short line, and `.ci/run` runs that same line."""
    section = (ROOT / "README.md").read_text().split("### Run the tests", 1)[1].split("\n## ", 1)[0]
    (command,) = re.findall(r"```bash\n(.*?)\n```", section, re.DOTALL)
    assert command == "python3 scripts/check.py"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert command in ci


def _collected(selection: str, module: str, env: dict[str, str]) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "--co", "-q"]
    done = subprocess.run(
        [*argv, "-m", selection, module], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: nothing selected
    return [line.split("::")[1].split("[")[0] for line in done.stdout.splitlines() if line.startswith(module)]


def test_a_test_needing_an_extra_is_never_core(repo_env: dict[str, str]) -> None:
    """`-m core` leaves out the tests marked `extra(...)` (here the τ packs' spray floor),
    whichever extras are installed, and keeps the others of the same module."""
    module = "tests/core/agents/test_spray_floor.py"
    core, rest = _collected("core", module, repo_env), _collected("not core", module, repo_env)
    assert set(rest) == {"test_on_the_tau_packs_too"}
    assert "test_the_oracle_still_passes_those_tasks" in core and "test_on_the_tau_packs_too" not in core
