"""A results folder the user cannot write: every command that only reads it works and writes
nothing (not the database, not its folder: no `-wal`/`-shm`, no lock file, no cached figure,
no schema update); a command that writes is one `error:` line before any work.

Read-only is marked with the mode bits (file 444, folder 555). Root ignores them when writing, but
castbench honours them, so these tests show the read-only path under root (as CI runs) too: the
folder's and the file's modification times catch any file created (and removed) beside the
database, or any write to it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import Result

from tests.support import invoke

TASKS = "retail-test-0001"


def _state(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every entry of `folder` (itself included) with its modification time, size and bytes."""
    entries = {".": (folder.stat().st_mtime_ns, 0, b"")}
    for path in sorted(folder.iterdir()):
        entries[path.name] = (path.stat().st_mtime_ns, path.stat().st_size, path.read_bytes())
    return entries


def _copy(db: Path, to: Path) -> None:
    """The whole database, what its write-ahead log holds too (the eval's engine is still open)."""
    with sqlite3.connect(db) as source, sqlite3.connect(to) as target:
        source.backup(target)
    target.close()


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results database with one run of a task x 2 trials."""
    db = tmp_path_factory.mktemp("stored") / "runs.db"
    result = invoke("eval", "--domain", "retail", "--tasks", TASKS, "--trials", "2", "--db", str(db))
    assert result.exit_code == 0, result.output
    return db


@pytest.fixture
def read_only(stored: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the stored database in a folder marked read-only, the file too."""
    folder = tmp_path / "results"
    folder.mkdir()
    db = folder / "runs.db"
    _copy(stored, db)
    db.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield db
    finally:
        folder.chmod(0o755)


def _ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.output


def _one_error_line(result: Result, *needles: str) -> str:
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_every_reading_command_works_and_writes_nothing(read_only: Path, tmp_path: Path) -> None:
    db = str(read_only)
    before = _state(read_only.parent)
    listed = json.loads(_ok(invoke("runs", "list", "--db", db, "--json")))
    assert [(run["status"], run["trials_stored"]) for run in listed] == [("complete", 2)]
    run_id = listed[0]["id"]
    assert "per task" in _ok(invoke("runs", "show", "latest", "--db", db))
    assert "#0" in _ok(invoke("runs", "show", run_id, "--task", "retail-test-0001", "--db", db))
    _ok(invoke("runs", "why", run_id, "--db", db, "--json"))
    exported = str(tmp_path / "run.castbench.json.gz")
    assert "2 trials" in _ok(invoke("export", run_id, "--db", db, "--out", exported))
    _ok(invoke("view", run_id, "--db", db, "--out", str(tmp_path / "run.html")))
    assert "pass^1" in _ok(invoke("compare", run_id, run_id, "--db", db))
    checks = ("--metric", "pass^1", "--max-drop", "0.1")
    gate = invoke("gate", "--baseline", run_id, "--candidate", exported, *checks, "--db", db)
    assert gate.exit_code == 2 and "the same run" in gate.output, gate.output  # read, then refused
    assert _state(read_only.parent) == before


def test_a_read_only_file_in_a_writable_folder_is_read(stored: Path, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _copy(stored, db)
    db.chmod(0o444)
    content = db.read_bytes()
    listed = json.loads(_ok(invoke("runs", "list", "--db", str(db), "--json")))
    assert listed[0]["trials_stored"] == 2
    assert db.read_bytes() == content


def test_writing_commands_are_refused_in_one_line_before_any_work(read_only: Path, tmp_path: Path) -> None:
    exported = tmp_path / "run.castbench.json.gz"
    _ok(invoke("export", "latest", "--db", str(read_only), "--out", str(exported)))
    before = _state(read_only.parent)
    again = invoke("eval", "--domain", "retail", "--tasks", TASKS, "--trials", "3", "--db", str(read_only))
    _one_error_line(again, "--db", "read-only", "writable")
    _one_error_line(invoke("import", str(exported), "--db", str(read_only)), "read-only")
    new = read_only.parent / "new.db"
    fresh = invoke("eval", "--domain", "retail", "--tasks", TASKS, "--db", str(new))
    _one_error_line(fresh, "folder", "read-only")
    assert _state(read_only.parent) == before


def test_a_reader_never_creates_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "runs.db"
    _one_error_line(invoke("runs", "list", "--db", str(missing)), "no results database")
    assert not missing.parent.exists()
