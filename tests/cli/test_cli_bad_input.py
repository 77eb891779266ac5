"""Bad input gets one `error:` line (exit 2) before any work is done, never a traceback after it,
nor a silent default: an empty `--db` or `--tasks`, an `--output` nobody can write, a trait
profile of the sweep that does not parse, an absurd `--trials`, an unknown loop setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import Result

from castbench._records.store import ResultsStore
from tests.support import invoke, sqlite_url

TASK = "retail-test-0001"


def one_error_line(result: Result, *needles: str) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "pydantic" not in result.output, result.output
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, result.output
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def _eval(db: str, *extra: str) -> Result:
    return invoke("eval", "--domain", "retail", "--tasks", TASK, "--trials", "1", "--db", db, *extra)


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--tasks", " , "], ["--tasks: no task id given"]),
        (["--sweep-traits", "garbage"], ["--sweep-traits", "unknown trait 'garbage'"]),
        (["--sweep-traits", ";"], ["--sweep-traits: no profile given"]),
        (["--traits", "patience=none"], ["--traits", "unknown trait"]),
        (["--trials", "1000000000"], ["--trials: 1000000000 trials per task is more than the cap of 1000"]),
        (["--trials", "0"], ["--trials 0: Input should be greater than or equal to 1"]),
        (["--rounds", "11"], ["--rounds 11: Input should be less than or equal to 10"]),
        (["--concurrency", "0"], ["--concurrency 0:"]),
        (["--step-timeout", "-1"], ["--step-timeout -1.0: Input should be greater than 0"]),
        (["--tool-faults", "1.5"], ["--tool-faults 1.5:"]),
        (["--user-perturb", "typo"], ["--user-perturb: unknown user 'typo'"]),
        (["--on-exhausted", "foo"], ["--on-exhausted 'foo': must be one of execute, block"]),
        (["--verify", "foo"], ["--verify 'foo': must be one of tool_calls, writes, all"]),
        (["--grading", "foo"], ["--grading 'foo': must be one of castbench, tau"]),
        (["--trials", "0", "--grading", "foo"], ["--trials 0:", "; --grading 'foo':"]),
    ],
)
def test_bad_eval_input_is_one_line_before_any_trial(
    tmp_path: Path, extra: list[str], needles: list[str]
) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    one_error_line(_eval(db, *extra), *needles)
    assert ResultsStore(db).runs() == []  # nothing ran


def test_an_empty_db_is_refused_not_kept_in_memory() -> None:
    one_error_line(_eval(""), "--db is empty")


def test_an_output_that_cannot_be_written_is_refused_before_the_run(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    db = sqlite_url(tmp_path / "runs.db")
    one_error_line(_eval(db, "--output", str(blocker / "summary.json")), "--output", "cannot be written")
    one_error_line(_eval(db, "--output", str(tmp_path)), "--output", "is a folder")
    assert ResultsStore(db).runs() == []
    written = tmp_path / "new" / "summary.json"
    assert _eval(db, "--output", str(written)).exit_code == 0 and written.stat().st_size > 0
    assert not list(written.parent.glob(".castbench-check-*"))  # the scratch file is gone


@pytest.mark.parametrize(
    ("metric", "drop", "words"),
    [
        ("pass^0", "0.1", "--metric 'pass^0': unknown metric"),
        ("pass^x", "0.1", "--metric 'pass^x': unknown metric"),
        ("pass^1", "-0.5", "--max-drop -0.5: Input should be greater than or equal to 0"),
    ],
)
def test_bad_gate_checks_are_one_line_not_a_pydantic_dump(metric: str, drop: str, words: str) -> None:
    result = invoke(
        "gate", "--baseline", "a.json", "--candidate", "b.json", "--metric", metric, f"--max-drop={drop}"
    )
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].startswith("error:") and words in lines[0]
    assert "pydantic" not in result.output and "type=" not in result.output


def _eval_raising(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, error: Exception) -> Result:
    def evaluate(**_: object) -> None:
        raise error

    monkeypatch.setattr("castbench._run.api.evaluate", evaluate)
    monkeypatch.delenv("CASTBENCH_TRACEBACK", raising=False)
    return _eval(sqlite_url(tmp_path / "runs.db"))


def test_a_bug_of_castbench_is_an_internal_error_with_its_traceback_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = _eval_raising(monkeypatch, tmp_path, KeyError("planned_tasks"))
    lines = [line for line in result.output.splitlines() if line.startswith(("error:", "internal error:"))]
    assert result.exit_code == 70 and len(lines) == 1, result.output
    assert lines[0].startswith("internal error: KeyError: 'planned_tasks'. This is a bug in castbench")
    kept = Path(lines[0].split("the traceback is in ")[1].split(" (")[0])
    assert "Traceback" in kept.read_text() and "planned_tasks" in kept.read_text()
    kept.unlink()


def test_a_full_disk_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import errno

    full = OSError(errno.ENOSPC, "No space left on device")
    error = one_error_line(_eval_raising(monkeypatch, tmp_path, full), "no space left on the disk")
    assert "re-run the same command to resume" in error


def test_a_second_eval_of_the_same_run_on_one_sqlite_file_is_warned(tmp_path: Path) -> None:
    """SQLite has no leases: a second process on the same run would redo every trial."""
    import subprocess
    import sys

    db = sqlite_url(tmp_path / "runs.db")
    from castbench._run.api import build_config

    digest = build_config(domains="retail", tasks=[TASK], trials=1)[0].config_hash()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from castbench._cli.checks import sqlite_run_taken as taken; "
            "assert not taken(sys.argv[1], sys.argv[2]); print('held', flush=True); time.sleep(60)",
            db,
            digest,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        second = _eval(db)
    finally:
        holder.kill()
        holder.wait()
    again = _eval(db)  # the other process is gone: no warning
    assert second.exit_code == 0 and "another eval process" not in again.output
    assert "another eval process is running this run on the same SQLite file" in " ".join(
        second.output.split()
    )


def test_runs_list_and_runs_show_agree_on_an_incomplete_run(tmp_path: Path) -> None:
    """A run stored `complete` whose planned trials are not all scored (as an imported partial
    run is) is `incomplete` in `runs list` too, as `runs show` says."""
    import json
    import sqlite3

    path = tmp_path / "runs.db"
    db = sqlite_url(path)
    assert invoke("eval", "--domain", "retail", "--tasks", TASK, "--trials", "2", "--db", db).exit_code == 0
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM trial WHERE trial_index = 1")
    (run,) = ResultsStore(db).runs()
    assert run.status == "complete"
    listed = json.loads(invoke("runs", "list", "--db", db, "--json").output)
    shown = " ".join(invoke("runs", "show", run.id, "--db", db).output.split())
    assert listed[0]["status"] == "incomplete" and "incomplete" in shown
