"""Kept records carry their shape's version: an older record is migrated when read (store rows,
exports, summary files), one from a newer castbench is refused with one line naming it and both
versions, and the version never enters a run's identity (its id and hash)."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from castbench._records.config import RUN_CONFIG
from castbench._records.migrations import RecordShape, RecordVersionError
from castbench._records.store import ResultsStore
from castbench._records.store.export import ArchiveError, export_run, read_export, write_export
from castbench._records.trial import TRIAL_RECORD
from castbench._results.compare.sources import SourceError, load_summary
from castbench._results.publish.verify import verify_run
from castbench._results.report.summary import RUN_SUMMARY, RunSummary, summarize_run
from castbench._run.api import evaluate
from tests.support import invoke, sqlite_url


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A one-trial oracle run in a SQLite file: (the file, the run id)."""
    path = tmp_path_factory.mktemp("versions") / "runs.db"
    result = evaluate(
        db=sqlite_url(path), domains="retail", policy="oracle", tasks=["retail-test-0001"], trials=1
    )
    return path, result.outcome.run_id


def _copy(stored: tuple[Path, str], tmp_path: Path) -> Path:
    copy = tmp_path / "runs.db"
    with sqlite3.connect(stored[0]) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # the store's write-ahead log included
    return copy


def _rewrite(db: Path, table: str, column: str, change: Any) -> None:
    """Replace every row's JSON `column` with `change(its dict)`, as another castbench wrote it."""
    with sqlite3.connect(db) as connection:
        rows = connection.execute(f"SELECT rowid, {column} FROM {table}").fetchall()
        for rowid, text in rows:
            changed = json.dumps(change(json.loads(text)))
            connection.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (changed, rowid))


def _unversioned(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key != "version"}


def test_migrations_take_a_record_from_its_version_to_the_current_one_in_order() -> None:
    def rename(raw: dict[str, Any]) -> dict[str, Any]:  # 1 -> 2: `n` became `count`
        return {"count": raw.pop("n"), **raw}

    def add_unit(raw: dict[str, Any]) -> dict[str, Any]:  # 2 -> 3: `unit` recorded; old ones were trials
        return {**raw, "unit": "trials"}

    shape = RecordShape("widget", (rename, add_unit))
    assert shape.current == 3
    assert shape.upgrade({"n": 4}, "w") == {"count": 4, "unit": "trials"}  # no version: version 1
    assert shape.upgrade({"version": 2, "count": 4}, "w") == {"count": 4, "unit": "trials"}
    assert shape.upgrade({"version": 3, "count": 4, "unit": "s"}, "w") == {"count": 4, "unit": "s"}
    with pytest.raises(RecordVersionError, match=r"^w: widget version 0 is not a version"):
        shape.upgrade({"version": 0}, "w")


def test_a_summary_written_before_runs_had_a_status_reads_as_incomplete_when_trials_are_missing(
    stored: tuple[Path, str], tmp_path: Path
) -> None:
    store = ResultsStore(sqlite_url(stored[0]))
    summary = summarize_run(stored[1], store.config(stored[1]), store.trials(stored[1]))
    old = summary.model_dump(mode="json", exclude={"status", "headline"})
    assert RunSummary.model_validate(RUN_SUMMARY.upgrade(old, "s")) == summary  # complete: all scored
    old["overall"] = {**old["overall"], "unscored_trials": 1, "incomplete_tasks": ["retail-test-0001"]}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(old))
    assert load_summary(str(path), db="").status == "incomplete"


def test_a_summary_from_a_newer_castbench_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"version": RUN_SUMMARY.current + 1, "run_id": "r-x"}))
    with pytest.raises(SourceError) as caught:
        load_summary(str(path), db="")
    assert str(caught.value) == (
        f"{path}: run summary version {RUN_SUMMARY.current + 1} was written by a newer castbench; "
        f"this one reads versions 1 to {RUN_SUMMARY.current} (upgrade castbench to read it)"
    )


def test_current_records_round_trip_unchanged_and_the_version_is_not_in_the_run_id(
    stored: tuple[Path, str], tmp_path: Path
) -> None:
    db, run_id = stored
    store = ResultsStore(sqlite_url(db))
    with sqlite3.connect(db) as connection:
        config_json, config_hash = connection.execute("SELECT config_json, config_hash FROM run").fetchone()
        (record_json,) = connection.execute("SELECT record_json FROM trial").fetchone()
    assert json.loads(config_json)["version"] == RUN_CONFIG.current
    assert json.loads(record_json)["version"] == TRIAL_RECORD.current
    config = store.config(run_id)
    assert config.config_hash() == config.written_hash() == config_hash and run_id == f"r-{config_hash[:12]}"
    assert RUN_CONFIG.dumps(config) == config_json
    assert [TRIAL_RECORD.dumps(record) for record in store.trials(run_id)] == [record_json]
    first, second = tmp_path / "a.castbench.json.gz", tmp_path / "b.castbench.json.gz"
    write_export(export_run(store, run_id), first)
    write_export(read_export(first), second)
    assert second.read_bytes() == first.read_bytes()


def test_a_store_written_before_records_had_versions_still_reads_and_verifies(
    stored: tuple[Path, str], tmp_path: Path
) -> None:
    db = _copy(stored, tmp_path)
    _rewrite(db, "trial", "record_json", _unversioned)
    _rewrite(db, "run", "config_json", _unversioned)
    before = ResultsStore(sqlite_url(stored[0])).trials(stored[1])
    store = ResultsStore(sqlite_url(db))
    assert store.trials(stored[1]) == before
    exported = export_run(store, stored[1])
    assert verify_run(exported.run_id, exported.config, exported.trials, exported.config_hash).verified
    result = invoke("verify", stored[1], "--db", sqlite_url(db))
    assert result.exit_code == 0, result.output


def test_an_export_written_before_records_had_versions_still_reads_verifies_and_imports(
    stored: tuple[Path, str], tmp_path: Path
) -> None:
    path = tmp_path / "old.castbench.json.gz"
    write_export(export_run(ResultsStore(sqlite_url(stored[0])), stored[1]), path)
    raw = json.loads(gzip.decompress(path.read_bytes()))
    raw["config"] = _unversioned(raw["config"])
    raw["bodies"] = {key: _unversioned(body) for key, body in raw["bodies"].items()}
    path.write_bytes(gzip.compress(json.dumps(raw).encode()))
    assert invoke("verify", str(path)).exit_code == 0
    result = invoke("import", str(path), "--db", sqlite_url(tmp_path / "other.db"))
    assert result.exit_code == 0 and "1 trials added" in result.output, result.output


@pytest.mark.parametrize(
    ("table", "column", "record", "command"),
    [("trial", "record_json", "trial record", "show"), ("run", "config_json", "run config", "list")],
)
def test_a_stored_record_from_a_newer_castbench_is_one_error_line(
    stored: tuple[Path, str], tmp_path: Path, table: str, column: str, record: str, command: str
) -> None:
    db = _copy(stored, tmp_path)
    _rewrite(db, table, column, lambda raw: {**raw, "version": 99})
    args = ["runs", command, *([stored[1]] if command == "show" else []), "--db", sqlite_url(db)]
    result = invoke(*args)
    said = (
        f"run {stored[1]}: {record} version 99 was written by a newer castbench; "
        "this one reads versions 1 to 1 (upgrade castbench to read it)"
    )
    if command == "list":  # the other rows still list; this one says what is wrong in its row
        assert result.exit_code == 0 and "damaged" in result.output, result.output
        assert "newer castbench" in " ".join(result.output.split())
        return
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {said}"


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("format_version", "castbench export version 3"),
        ("config", "config: run config version 2"),
        ("trials", "trial 1: trial record version 2"),
    ],
)
def test_an_export_from_a_newer_castbench_is_refused_naming_the_file(
    stored: tuple[Path, str], tmp_path: Path, where: str, message: str
) -> None:
    path = tmp_path / "new.castbench.json.gz"
    write_export(export_run(ResultsStore(sqlite_url(stored[0])), stored[1]), path)
    raw = json.loads(gzip.decompress(path.read_bytes()))
    if where == "format_version":
        raw["format_version"] = 3
    elif where == "config":
        raw["config"]["version"] = 2
    else:
        raw["bodies"][raw["trials"][0]["body"]]["version"] = 2
    path.write_bytes(gzip.compress(json.dumps(raw).encode()))
    with pytest.raises(ArchiveError, match=f"^{path}: {message} was written by a newer castbench"):
        read_export(path)
    result = invoke("import", str(path), "--db", sqlite_url(tmp_path / "other.db"))
    assert result.exit_code == 2 and result.output.startswith(f"error: {path}: {message}"), result.output
