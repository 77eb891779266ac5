"""The CPU budget CI holds (issue 40, `bench/cpu_budget.py`): the check passes on this build
against the committed reference, fails on a build deliberately slowed by 50% (above the 15%
allowed), and refuses a reference measured on another workload. Each check runs in a process of
its own, as CI's would: the slowing stays inside it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "cpu_budget.py"
REFERENCE = ROOT / "bench" / "cpu_budget.json"
VERDICT = re.compile(
    r"budget (oracle|noisy): ratio ([0-9.]+) against reference ([0-9.]+) .*: (ok|OVER BUDGET)"
)


def budget(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *options], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def verdicts(output: str) -> dict[str, tuple[float, float, str]]:
    return {m[1]: (float(m[2]), float(m[3]), m[4]) for m in VERDICT.finditer(output)}


def test_this_build_holds_the_committed_budget_and_a_slowed_one_does_not() -> None:
    committed = json.loads(REFERENCE.read_text())
    assert set(committed["ratio"]) == {"oracle", "noisy"}
    assert {"platform", "cpu", "cores", "python"} <= set(committed["machine"]) and committed["date"]

    held = budget("--check")
    assert held.returncode == 0, held.stdout + held.stderr
    figures = verdicts(held.stdout)
    assert set(figures) == {"oracle", "noisy"}
    for name, (ratio, reference, verdict) in figures.items():
        assert verdict == "ok" and reference == committed["ratio"][name]
        assert ratio <= reference * 1.15
    assert re.search(r"oracle: \d+ trials/s, [0-9.]+ ms CPU per trial", held.stdout)

    # +50% is over three times the tolerance: three rounds see it even on a shared machine (at a
    # load average of 12-15 on 2 cores, +30% once read "ok" for one of the two workloads)
    slowed = budget("--check", "--slow-down", "50", "--rounds", "3")
    assert slowed.returncode == 1, slowed.stdout + slowed.stderr
    over = verdicts(slowed.stdout)
    assert {verdict for _, _, verdict in over.values()} == {"OVER BUDGET"}
    for name, (ratio, reference, _) in over.items():
        assert ratio > reference * 1.15, name


def test_a_reference_for_another_workload_is_refused(tmp_path: Path) -> None:
    other = json.loads(REFERENCE.read_text())
    other["workload"]["trials"] += 1
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(other))
    refused = budget("--check", "--reference", str(path))
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines()[-1].startswith(f"error: reference {path}")
    assert "another workload" in refused.stderr and "budget" not in refused.stdout
