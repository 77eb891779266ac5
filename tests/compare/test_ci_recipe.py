"""Runs the commands of docs/ci.md, taken from its code blocks, so the recipe cannot drift.

The first ```bash block makes the baseline, the first ```toml block is ci/gate.toml, and the
```yaml block is the workflow: its `run:` steps are executed in order as GitHub Actions would
(a failed step skips the rest except `if: always()` steps), apart from the install step, which
the test environment has already done.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.slow  # a 16-trial baseline of the whole retail split, then the workflow twice

DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"
BASELINE_POLICY = "scripted:noisy?p=0.15"
REGRESSED_POLICY = "scripted:noisy?p=0.30"
"""The pair bench/gate_rates.py measures the recipe's rates on."""


def _block(language: str) -> str:
    match = re.search(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert match, f"docs/ci.md has no ```{language} block"
    return match.group(1)


def _workflow_steps() -> tuple[dict[str, str], list[dict[str, Any]]]:
    workflow = yaml.safe_load(_block("yaml"))
    [job] = workflow["jobs"].values()
    return dict(job.get("env", {})), job["steps"]


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """An agent repository with the baseline and gate.toml made as the doc says."""
    root = tmp_path_factory.mktemp("agent-repo")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    env["COLUMNS"] = "160"
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env.pop("CASTBENCH_DB", None)
    made = _bash(_block("bash"), root, {**env, "POLICY": BASELINE_POLICY})
    assert made.returncode == 0, made.stdout + made.stderr
    (root / "ci" / "gate.toml").write_text(_block("toml"))
    return root, env


def _run_workflow(root: Path, env: dict[str, str], policy: str) -> tuple[int, Path]:
    """Exit code of the job, and the step-summary file the steps wrote."""
    workflow_env, steps = _workflow_steps()
    summary = root / f"step-summary-{len(list(root.glob('step-summary-*')))}.md"
    step_env = {**env, **workflow_env, "POLICY": policy, "GITHUB_STEP_SUMMARY": str(summary)}
    failed_with = 0
    for step in steps:
        command = step.get("run")
        if command is None or command.startswith("pip install"):
            continue
        if failed_with and step.get("if") != "always()":
            continue
        done = _bash(command, root, step_env)
        if done.returncode and not failed_with:
            failed_with = done.returncode
            print(done.stdout, done.stderr)
    return failed_with, summary


def test_the_workflow_calls_the_commands_the_test_runs() -> None:
    workflow_env, steps = _workflow_steps()
    commands = [step["run"] for step in steps if "run" in step]
    assert "POLICY" in workflow_env
    assert any(c.startswith("castbench eval") for c in commands)
    assert any("castbench gate --baseline ci/baseline.json" in c for c in commands)
    assert any("--add-trials" in c and "--max-trials" in c for c in commands)  # tops up while undecided


def test_unchanged_agent_passes(workspace: tuple[Path, dict[str, str]]) -> None:
    root, env = workspace
    code, summary = _run_workflow(root, env, BASELINE_POLICY)
    assert code == 0
    assert "castbench gate: PASS" in summary.read_text()
    assert (root / "gate.xml").read_text().count("<testcase") == 2


def test_regressed_agent_fails_the_job(workspace: tuple[Path, dict[str, str]]) -> None:
    root, env = workspace
    code, summary = _run_workflow(root, env, REGRESSED_POLICY)
    assert code == 1
    assert "castbench gate: FAIL" in summary.read_text()  # the `if: always()` step still ran
