"""Exported runs: a portable file with everything the store knows, imported without duplicates."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench.cli.app import app
from castbench.compare import load_summary
from castbench.publish.archive import ArchiveError, export_run, import_run, read_export, write_export
from castbench.report import summarize_run
from castbench.store import ResultsStore
from tests.publish.exports import Exports

cli = CliRunner()


def test_an_export_holds_the_whole_run(exports: Exports) -> None:
    store = ResultsStore(exports.db)
    run_id = exports.run_ids["noisy"]
    exported = read_export(exports.noisy)
    assert exported.run_id == run_id and exported.config == store.config(run_id)
    assert exported.config_hash == store.run(run_id).config_hash
    assert "packages" in exported.meta
    stored = store.trials(run_id)
    assert len(exported.trials) == len(stored) == 240
    assert [t.model_dump(exclude={"steps", "duration_s"}) for t in exported.trials] == [
        t.model_dump(exclude={"steps", "duration_s"}) for t in stored
    ]
    assert summarize_run(run_id, exported.config, exported.trials) == summarize_run(
        run_id, store.config(run_id), stored
    )


def test_export_bytes_depend_only_on_the_run(exports: Exports, tmp_path: Path) -> None:
    again = tmp_path / "again.castbench.json.gz"
    write_export(export_run(ResultsStore(exports.db), exports.run_ids["noisy"]), again)
    assert again.read_bytes() == exports.noisy.read_bytes()
    assert exports.noisy.read_bytes()[4:8] == b"\0\0\0\0"  # gzip header: no timestamp


def test_import_loads_once(exports: Exports, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'other.db'}"
    exported = read_export(exports.noisy)
    first = import_run(ResultsStore(db), exported)
    assert first.created_run and first.added_trials == 240 and first.already_present == 0
    second = import_run(ResultsStore(db), exported)
    assert not second.created_run and second.added_trials == 0 and second.already_present == 240
    store = ResultsStore(db)
    assert store.count_trials(exported.run_id) == 240
    assert load_summary(exported.run_id, db) == load_summary(str(exports.noisy), "sqlite://")


def test_import_refuses_a_different_run_under_the_same_id(exports: Exports, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'clash.db'}"
    exported = read_export(exports.noisy)
    import_run(ResultsStore(db), exported)
    impostor = exported.model_copy(update={"config_hash": "f" * 64})
    with pytest.raises(ArchiveError, match="already holds a run"):
        import_run(ResultsStore(db), impostor)


def test_unreadable_files(tmp_path: Path) -> None:
    plain = tmp_path / "plain.castbench.json.gz"
    plain.write_text("{}")
    with pytest.raises(ArchiveError, match="not a gzip-compressed castbench export"):
        read_export(plain)
    foreign = tmp_path / "foreign.json.gz"
    foreign.write_bytes(gzip.compress(json.dumps({"hello": 1}).encode()))
    with pytest.raises(ArchiveError, match="not a castbench export"):
        read_export(foreign)
    with pytest.raises(ArchiveError, match="cannot read"):
        read_export(tmp_path / "missing.json.gz")


def test_export_and_import_commands(exports: Exports, tmp_path: Path) -> None:
    out = tmp_path / "results" / "mine.castbench.json.gz"
    run_id = exports.run_ids["oracle"]
    result = cli.invoke(
        app, ["export", run_id, "--db", exports.db, "--out", str(out)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == exports.oracle.read_bytes()
    db = f"sqlite:///{tmp_path / 'imported.db'}"
    first = cli.invoke(app, ["import", str(out), "--db", db], env={"COLUMNS": "200"})
    assert first.exit_code == 0 and "240 trials added" in first.output, first.output
    second = cli.invoke(app, ["import", str(out), "--db", db], env={"COLUMNS": "200"})
    assert second.exit_code == 0 and "0 trials added, 240 already there" in second.output, second.output
    missing = cli.invoke(app, ["export", "r-none", "--db", exports.db])
    assert missing.exit_code == 2 and "no run 'r-none'" in missing.output
