"""The API and the CLI give the same options the same run: `castbench eval ...` and
`castbench.evaluate(...)` with those options resume each other (one run id), so a run started from
a script can be resumed from a shell and a Postgres split can mix both."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import castbench
from castbench._cli.app import app
from castbench._records.perturbations import Perturbations

TASKS = ["retail-test-0001", "retail-test-0002"]


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        ([], {}),
        (
            ["--policy", "oracle", "--seed", "3", "--max-steps", "12"],
            {"policy": "oracle", "seed": 3, "limits": 12},
        ),
        (
            ["--critic", "rules", "--rounds", "2", "--on-exhausted", "block", "--verify", "writes"],
            {"critic": "rules", "verification": (2, "block", "writes")},
        ),
        (
            ["--traits", "impatience=high", "--grading", "tau"],
            {"traits": "impatience=high", "grading": "tau"},
        ),
        (
            ["--tool-faults", "0.5", "--fault-kinds", "timeout,error", "--user-perturb", "typos"],
            {"perturbations": {"tool_faults": 0.5, "fault_kinds": ["error", "timeout"], "user": ["typos"]}},
        ),
    ],
)
def test_the_cli_and_the_api_agree_on_the_run_id(
    tmp_path: Path, argv: list[str], options: dict[str, Any]
) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    common = ["--domain", "retail", "--tasks", " , ".join(TASKS), "--trials", "1", "--db", db]
    shown = CliRunner().invoke(app, ["eval", *common, *argv], env={"COLUMNS": "200"})
    assert shown.exit_code in (0, 1), shown.output
    found = re.search(r"run (r-[0-9a-f]+) stored", shown.output)
    assert found, shown.output
    api: dict[str, Any] = dict(options)
    if "limits" in api:
        api["limits"] = castbench._trial.rollout.Limits(max_steps=api["limits"])
    if "verification" in api:
        rounds, exhausted, scope = api["verification"]
        api["verification"] = castbench._trial.rollout.Verification(
            rounds=rounds, on_exhausted=exhausted, scope=scope
        )
    if "perturbations" in api:
        api["perturbations"] = Perturbations(**api["perturbations"])
    outcome = castbench.evaluate(
        db=db, domains="retail", tasks=list(reversed(TASKS)), trials=1, **api
    ).outcome
    assert outcome.run_id == found.group(1) and outcome.resumed and outcome.ran == 0
