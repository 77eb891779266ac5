"""`castbench eval` as users type it (in process, through typer's CliRunner)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from castbench._run import api
from castbench._run.options import EvalOptions
from tests.support import invoke, sqlite_url

TASKS = "retail-test-0001,retail-test-0006,retail-test-0010"


def _first_line_and_options(
    monkeypatch: pytest.MonkeyPatch, *args: str, env: dict[str, str | None] | None = None
) -> tuple[str, dict[str, Any], Result]:
    """What `castbench eval ...` prints first and what it would run (the run itself is stubbed:
    the command imports `castbench._run.api.evaluate` when it runs)."""
    received: dict[str, Any] = {}

    def stop(options: EvalOptions, **hooks: Any) -> None:
        received.update(options.flat())
        raise ValueError("stopped by the test")

    monkeypatch.setattr(api, "evaluate", stop)
    result = invoke("eval", *args, env=env)
    assert result.exit_code == 2 and "error: stopped by the test" in result.output
    return result.output.splitlines()[0], received, result


def test_no_flags_runs_the_offline_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first_line, received, _ = _first_line_and_options(monkeypatch)
    assert first_line.startswith("castbench eval")
    assert first_line.endswith(
        "domains all (test split), policy scripted:noisy, critic none, user scripted, 8 trials, seed 0"
    )
    assert (received["domains"], received["policy"], received["critic"], received["user"]) == (
        "all",
        "scripted:noisy",
        "none",
        "scripted",
    )
    assert (received["trials"], received["seed"], received["db"]) == (8, 0, "sqlite:///results/castbench.db")


def test_no_flags_says_so_in_the_first_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first_line, _, _ = _first_line_and_options(monkeypatch)
    assert first_line.startswith("castbench eval on the offline defaults: ")


def test_a_database_from_the_environment_keeps_the_defaults(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = db_url
    first_line, received, _ = _first_line_and_options(monkeypatch, env={"CASTBENCH_DB": db})
    assert received["db"] == db
    assert first_line.startswith("castbench eval on the offline defaults: ")


def test_any_flag_is_no_longer_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "evaluate", lambda **_: (_ for _ in ()).throw(ValueError("stop")))
    first_line = invoke("eval", "--trials", "2").output.splitlines()[0]
    assert first_line.startswith("castbench eval: ") and "2 trials" in first_line


def _eval(tmp_path: Path, *extra: str) -> Result:
    return invoke(
        "eval",
        "--domain",
        "retail",
        "--policy",
        "oracle",
        "--trials",
        "8",
        "--tasks",
        TASKS,
        "--db",
        sqlite_url(tmp_path / "r.db"),
        "--output",
        str(tmp_path / "summary.json"),
        *extra,
    )


def test_output_json_has_the_documented_keys(tmp_path: Path) -> None:
    result = _eval(tmp_path)
    assert result.exit_code == 0, result.output
    assert "(24 trials run, 0 reused)" in result.output and "summary written to" in result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {"run_id", "config", "domains", "overall"} <= summary.keys()
    assert summary["config"]["policy"] == "oracle" and summary["config"]["trials"] == 8
    retail = summary["domains"]["retail"]
    assert {"n_tasks", "n_trials", "pass_hat", "pass_at", "ci95", "per_task"} <= retail.keys()
    assert (retail["n_tasks"], retail["n_trials"]) == (3, 24)
    assert list(retail["pass_hat"]) == [str(k) for k in range(1, 9)]
    assert set(retail["pass_hat"].values()) == {1.0} and set(retail["pass_at"].values()) == {1.0}
    assert list(retail["ci95"]) == [str(k) for k in range(1, 9)]
    assert retail["per_task"] == {task: {"n": 8, "successes": 8} for task in TASKS.split(",")}
    assert summary["overall"]["per_task"] == {
        f"retail/{t}": {"n": 8, "successes": 8} for t in TASKS.split(",")
    }


def test_running_the_same_command_again_resumes(tmp_path: Path) -> None:
    first = _eval(tmp_path)
    again = _eval(tmp_path)
    assert first.exit_code == again.exit_code == 0
    assert "resuming: 24 of 24 trials already stored" in again.output
    assert "resumed in" in again.output and "(0 trials run, 24 reused)" in again.output
    with sqlite3.connect(tmp_path / "r.db") as connection:
        assert connection.execute("select count(*) from trial").fetchone() == (24,)
        assert connection.execute("select count(*) from run").fetchone() == (1,)


def test_a_team_policy_runs_by_import_path(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "team.db")
    spec = "tests.core.fixtures_agents:TeamPolicy?closing=Is%20there%20anything%20else%3F"
    result = invoke(
        "eval",
        "--domain",
        "retail",
        "--policy",
        spec,
        "--trials",
        "2",
        "--tasks",
        TASKS,
        "--db",
        db,
        "--output",
        str(tmp_path / "team.json"),
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "team.json").read_text())
    assert summary["config"]["policy"] == spec and summary["config"]["privileged"] == []
    assert summary["domains"]["retail"]["n_trials"] == 6
    # it did nothing: even the task with nothing to change fails (nothing looked up, no reason given)
    assert summary["domains"]["retail"]["per_task"]["retail-test-0001"] == {"n": 2, "successes": 0}
    assert summary["domains"]["retail"]["per_task"]["retail-test-0006"] == {"n": 2, "successes": 0}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "telepathy"], "error: unknown policy 'telepathy'"),
        (["--policy", "scripted:noisy?p=7"], "'p': Input should be less than or equal to 1"),
        (["--policy", "scripted:noisy?q=1"], "unknown parameter ['q']"),
        (["--critic", "no_such_module_xyz:Critic"], "cannot import 'no_such_module_xyz'"),
        (
            ["--policy", "tests.core.fixtures_agents:ProposeMisspelledPolicy"],
            "class ProposeMisspelledPolicy does not implement the policy protocol: no method 'propose'",
        ),
        (
            ["--tasks", "retail-test-0001,retail-test-9999"],
            "unknown task id(s) in split test: retail-test-9999",
        ),
        (["--domain", "atlantis"], "unknown domain 'atlantis'"),
    ],
)
def test_bad_options_exit_2_with_a_clear_error(db_url: str, args: list[str], message: str) -> None:
    result = invoke("eval", "--domain", "retail", "--trials", "1", "--db", db_url, *args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
