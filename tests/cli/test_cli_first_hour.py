"""A new user's first hour (#42): each bad input is one `error:` line naming what is wrong and
where, never `internal error` (exit 70) or a traceback; the traps warn or refuse; `runs list` is
one line per run at 80 and 100 columns; `--output -` is stdout."""

from __future__ import annotations

import json
import socket
import sqlite3
from pathlib import Path

import pytest
from typer.testing import Result

from castbench._agents.models.costs import price_known
from castbench._cli.errors import EXIT_CODES
from castbench._trial.execution import worker_cap
from tests.support import ctrl_c_delivered, invoke

TASK = "retail-test-0001"


def _one_error_line(result: Result, *needles: str, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    for needle in needles:
        assert needle in " ".join(result.output.split()), result.output
    return errors[0]


def _eval(db: Path | str, *extra: str) -> Result:
    return invoke("eval", "--domain", "retail", "--tasks", TASK, "--trials", "1", "--db", str(db), *extra)


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A store with one run of one trial."""
    db = tmp_path / "runs.db"
    assert _eval(db).exit_code == 0
    return db


def test_a_damaged_sqlite_file_names_the_file(stored: Path) -> None:
    with sqlite3.connect(stored) as connection:  # everything into the file itself
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(stored.read_bytes())
    data[8192:] = b"\xab" * (len(data) - 8192)  # the pages after the second overwritten
    stored.write_bytes(bytes(data))
    for command in (["runs", "list"], ["runs", "show", "latest"], ["verify", "latest"]):
        line = _one_error_line(invoke(*command, "--db", str(stored)), str(stored))
        assert "damaged" in line or "not a SQLite database" in line, line


def test_an_unreadable_trial_row_names_the_trial_in_show_verify_and_export(
    stored: Path, tmp_path: Path
) -> None:
    with sqlite3.connect(stored) as connection:
        connection.execute("UPDATE trial SET record_json = '{\"broken'")
    out = tmp_path / "run.castbench.json.gz"
    for command in (
        ["runs", "show", "latest"],
        ["verify", "latest"],
        ["export", "latest", "--out", str(out)],
    ):
        _one_error_line(invoke(*command, "--db", str(stored)), f"retail/{TASK} trial 0", "do not read")
    assert not out.exists()


def test_view_serve_on_a_busy_port_says_so(stored: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        _one_error_line(
            invoke("view", "latest", "--serve", "--port", port, "--db", str(stored)), f"--port {port}"
        )


def test_runs_why_judge_without_a_key_fails_before_any_call(stored: Path) -> None:
    result = invoke(
        "runs",
        "why",
        "latest",
        "--judge",
        "openai/gpt-4o-mini",
        "--db",
        str(stored),
        env={"OPENAI_API_KEY": None},
    )
    _one_error_line(result, "OPENAI_API_KEY")


def test_a_mistyped_db_folder_is_refused_not_created(tmp_path: Path) -> None:
    db = tmp_path / "reslts" / "runs.db"
    _one_error_line(_eval(db), "does not exist")
    assert not db.parent.exists()


@pytest.mark.parametrize("domain", ["", " ", ","])
def test_an_empty_domain_is_refused_not_every_domain(tmp_path: Path, domain: str) -> None:
    result = invoke("eval", "--domain", domain, "--trials", "1", "--db", str(tmp_path / "r.db"))
    _one_error_line(result, "no domain given")


def test_output_dash_writes_the_summary_to_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    from typer.testing import CliRunner

    from castbench._cli.app import app

    args = ["eval", "--domain", "retail", "--tasks", TASK, "--trials", "1", "--db", "r.db", "--output", "-"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "100", "CASTBENCH_DB": None})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "complete"  # stdout is the summary alone
    assert "pass^1" in result.stderr
    assert not (tmp_path / "-").exists()


def test_gating_a_run_against_itself_is_refused(stored: Path) -> None:
    result = invoke("gate", "--baseline", "latest", "--candidate", "latest", "--db", str(stored))
    _one_error_line(result, "the same run")


def test_concurrency_beyond_what_worker_processes_allow_is_capped_with_a_warning(tmp_path: Path) -> None:
    result = _eval(
        tmp_path / "r.db", "--policy", "tests.core.fixtures_agents:TeamPolicy", "--concurrency", "100000"
    )
    assert result.exit_code == 0, result.output
    assert f"warning: --concurrency 100000 capped at {worker_cap()}" in " ".join(result.output.split())


def test_a_model_without_a_price_is_named() -> None:
    assert price_known({"model": "openai/gpt-4o-mini"})
    assert not price_known({"model": "openai/our-own-finetune-7b"})
    assert price_known(
        {"model": "openai/our-own-finetune-7b", "input_cost_per_token": 1e-7, "output_cost_per_token": 2e-7}
    )


def test_runs_list_is_one_line_per_run_at_80_and_100_columns(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    long = "scripted:noisy?p=0.3&recover=0.5&insist=0.25&clarify=0.75"
    for seed in ("1", "2", "3"):
        policy = long if seed != "2" else "oracle"
        assert _eval(db, "--seed", seed, "--policy", policy).exit_code == 0
    ids = [run["id"] for run in json.loads(invoke("runs", "list", "--db", str(db), "--json").output)]
    for width in (80, 100):
        lines = invoke("runs", "list", "--db", str(db), width=width).output.splitlines()
        assert max(len(line.rstrip()) for line in lines) <= width
        for run_id in ids:
            (line,) = [line for line in lines if run_id in line]
            assert line.split()[-1] == "1"  # the trial count ends the same line


def test_every_exit_code_is_documented() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "exit-codes.md").read_text()
    for code, meaning in EXIT_CODES.items():
        assert f"| {code} | {meaning} |" in doc


def test_the_progress_bar_counts_what_this_invocation_ran(stored: Path) -> None:
    """On a resume the bar says what it reused, not "passed 0" for trials it did not run."""
    resumed = " ".join(_eval(stored).output.split())
    assert "1 reused, passed 0 of 0 run" in resumed
    fresh = " ".join(_eval(stored, "--seed", "9").output.split())
    assert "of 1 run" in fresh and "reused, passed" not in fresh


@pytest.mark.parametrize("where", [[], ["--in-process"]], ids=["worker", "in-process"])
def test_an_agent_module_with_a_syntax_error_names_its_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: list[str]
) -> None:
    module = f"typo_policy_{len(where)}"  # a module name per case: each its own file
    (tmp_path / f"{module}.py").write_text("class Policy:\n    def __init__(self, briefing)\n        pass\n")
    monkeypatch.chdir(tmp_path)
    result = _eval(tmp_path / "r.db", "--policy", f"{module}:Policy", *where)
    line = _one_error_line(result, "syntax error in")
    assert f"{tmp_path / module}.py:2: expected ':'" in line and "code -9" not in result.output


def test_a_double_ctrl_c_exits_130_without_a_traceback(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    castbench = str(Path(sys.executable).parent / "castbench")
    command = [castbench, "eval", "--domain", "retail", "--trials", "8", "--db", str(tmp_path / "r.db")]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=ctrl_c_delivered
    )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # the trials are under way once the run's provenance is out
        seen.append(line)
        if line.startswith("policy privileged"):
            break
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=120)
    output = "".join(seen) + rest
    assert process.returncode == 130, output
    assert "Traceback" not in output and "Exception ignored" not in output, output
