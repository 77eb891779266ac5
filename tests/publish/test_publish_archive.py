"""Exported runs: a portable file with everything the store knows, imported without duplicates."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from castbench._records.store import ResultsStore
from castbench._records.store.export import ArchiveError, export_run, read_export, write_export
from castbench._records.trial import TrialRecord
from castbench._results.compare.sources import load_summary
from castbench._results.publish.archive import import_run
from tests.publish.exports import Exports
from tests.support import invoke, sqlite_url, without_durations


def _whole(records: list[TrialRecord]) -> list[Any]:
    return [without_durations(record.model_dump(mode="json")) for record in records]


def test_an_export_holds_the_whole_run(exports: Exports) -> None:
    store = ResultsStore(exports.db)
    run_id = exports.run_ids["noisy"]
    exported = read_export(exports.noisy)
    row = store.run(run_id)
    assert (exported.run_id, exported.status, exported.config_hash) == (run_id, row.status, row.config_hash)
    assert exported.created == row.created
    assert exported.config == store.config(run_id) and exported.meta == json.loads(row.meta_json)
    stored = store.trials(run_id)
    assert len(exported.trials) == len(stored) == 240
    assert sum(len(t.steps) for t in stored) > 240  # whole conversations, compared step by step
    assert _whole(exported.trials) == _whole(stored)


def test_export_bytes_depend_only_on_the_run(exports: Exports, tmp_path: Path) -> None:
    again = tmp_path / "again.castbench.json.gz"
    write_export(export_run(ResultsStore(exports.db), exports.run_ids["noisy"]), again)
    assert again.read_bytes() == exports.noisy.read_bytes()
    assert exports.noisy.read_bytes()[4:8] == b"\0\0\0\0"  # gzip header: no timestamp


def test_import_loads_once(exports: Exports, db_url: str) -> None:
    exported = read_export(exports.noisy)
    first = import_run(ResultsStore(db_url), exported)
    assert first.created_run and first.added_trials == 240 and first.already_present == 0
    second = import_run(ResultsStore(db_url), exported)
    assert not second.created_run and second.added_trials == 0 and second.already_present == 240
    store = ResultsStore(db_url)
    assert store.count_trials(exported.run_id) == 240
    assert _whole(store.trials(exported.run_id)) == _whole(ResultsStore(exports.db).trials(exported.run_id))
    imported, original = load_summary(exported.run_id, db_url), load_summary(exported.run_id, exports.db)
    assert imported.provenance is not None and imported.provenance.origin.kind == "submitted"
    unplaced = {"provenance": None}  # the rest of the summary is the run's, wherever it is stored
    assert imported.model_copy(update=unplaced) == original.model_copy(update=unplaced)


def _errored(record: TrialRecord) -> TrialRecord:
    """The same trial as an outage left it: not scored, after two tries."""
    return record.model_copy(
        update={"status": "error", "reward": None, "grade": None, "steps": [], "end_reason": "infra_error",
                "error": "transient error after 6 attempt(s)", "attempts": 2}
    )  # fmt: skip


def test_import_over_errored_and_overlapping_trials(exports: Exports, db_url: str) -> None:
    """A store that already holds part of the run: a third of it scored as in the file, a third
    errored. The import keeps the scored third, replaces the errored trials with the file's scored
    ones (their tries add up, as when a run is resumed) and adds the rest."""
    exported = read_export(exports.noisy)
    trials = exported.trials
    scored, errored = trials[:80], [_errored(t) for t in trials[80:160]]
    store = ResultsStore(db_url)
    import_run(store, exported.model_copy(update={"trials": [*scored, *errored]}))
    assert sum(t.status == "error" for t in store.trials(exported.run_id)) == 80

    outcome = import_run(store, exported)
    assert (outcome.created_run, outcome.added_trials, outcome.already_present) == (False, 160, 80)
    imported = store.trials(exported.run_id)
    expected = [
        t.model_copy(update={"attempts": t.attempts + 2}) if 80 <= index < 160 else t
        for index, t in enumerate(trials)
    ]
    assert _whole(imported) == _whole(expected)
    summary = load_summary(exported.run_id, db_url)
    original = load_summary(exported.run_id, exports.db)
    assert summary.overall.per_task == original.overall.per_task
    assert summary.overall.pass_hat == original.overall.pass_hat
    assert summary.overall.errored_trials == 0 and summary.overall.retried_trials == 80
    again = import_run(store, exported)
    assert (again.added_trials, again.already_present) == (0, 240)


def test_import_refuses_a_different_run_under_the_same_id(exports: Exports, db_url: str) -> None:
    db = db_url
    exported = read_export(exports.noisy)
    import_run(ResultsStore(db), exported)
    config = exported.config.model_copy(update={"extra": {"another": "configuration"}})
    impostor = exported.model_copy(update={"config": config, "config_hash": config.config_hash()})
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
    result = invoke("export", run_id, "--db", exports.db, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == exports.oracle.read_bytes()
    db = sqlite_url(tmp_path / "imported.db")
    first = invoke("import", str(out), "--db", db)
    assert first.exit_code == 0 and "240 trials added" in first.output, first.output
    second = invoke("import", str(out), "--db", db)
    assert second.exit_code == 0 and "0 trials added, 240 already there" in second.output, second.output
    missing = invoke("export", "r-none", "--db", exports.db)
    assert missing.exit_code == 2 and "no run 'r-none'" in missing.output
