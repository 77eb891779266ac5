"""An export stores identical trials once: trials that played the same conversation share one
body, each keeping its own index, seed and durations; a file of the old form (every record
inline, envelope version 1) still reads, to the same run; a broken reference is one error line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from castbench._records.store import ResultsStore
from castbench._records.store.export import ArchiveError, ExportedRun, export_run, read_export, write_export
from castbench._records.trial import TRIAL_RECORD
from castbench._run.api import evaluate
from tests.support import invoke, sqlite_url, without_durations

TASKS = ["retail-test-0001", "retail-test-0002"]
TRIALS = 3


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> ExportedRun:
    """The oracle on two tasks, three trials each: the trials of a task differ only in their
    index, seed and clock readings."""
    db = sqlite_url(tmp_path_factory.mktemp("shared") / "runs.db")
    result = evaluate(db=db, domains="retail", policy="oracle", tasks=TASKS, trials=TRIALS, seed=0)
    return export_run(ResultsStore(db), result.outcome.run_id)


def _raw(path: Path) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return raw


def _write_raw(path: Path, raw: dict[str, Any]) -> None:
    path.write_bytes(gzip.compress(json.dumps(raw, separators=(",", ":")).encode(), mtime=0))


def test_identical_trials_are_stored_once_and_read_back_whole(
    oracle_run: ExportedRun, tmp_path: Path
) -> None:
    path = tmp_path / "run.castbench.json.gz"
    write_export(oracle_run, path)
    raw = _raw(path)
    assert raw["format_version"] == 2
    assert len(raw["bodies"]) == len(TASKS)  # one conversation per task, not one per trial
    assert len(raw["trials"]) == len(TASKS) * TRIALS
    bodies = {trial["body"] for trial in raw["trials"]}
    assert bodies == set(raw["bodies"])
    seeds = {trial["seed"] for trial in raw["trials"]}
    assert len(seeds) == len(TASKS) * TRIALS  # each trial keeps its own seed
    assert all(trial["durations"] for trial in raw["trials"])  # and its own clock readings
    back = read_export(path)
    assert [without_durations(t.model_dump(mode="json")) for t in back.trials] == [
        without_durations(t.model_dump(mode="json")) for t in oracle_run.trials
    ]
    for stored, original in zip(back.trials, oracle_run.trials, strict=True):  # durations kept to the µs
        assert stored.duration_s == round(original.duration_s, 6)
        assert [s.timing.total_s for s in stored.steps] == [
            round(s.timing.total_s, 6) for s in original.steps
        ]
    again = tmp_path / "again.castbench.json.gz"
    write_export(back, again)
    assert again.read_bytes() == path.read_bytes()  # a re-export changes nothing in git


def test_a_file_of_the_old_form_reads_to_the_same_run(oracle_run: ExportedRun, tmp_path: Path) -> None:
    new = tmp_path / "new.castbench.json.gz"
    write_export(oracle_run, new)
    current = read_export(new)
    old = tmp_path / "old.castbench.json.gz"
    envelope = current.model_dump(mode="json", exclude={"trials", "format_version"})
    inline = [TRIAL_RECORD.stamp(record.model_dump(mode="python")) for record in current.trials]
    _write_raw(old, {**envelope, "format_version": 1, "trials": inline})  # as castbench wrote it before
    assert "bodies" not in _raw(old)
    assert read_export(old) == current
    rewritten = tmp_path / "rewritten.castbench.json.gz"
    write_export(read_export(old), rewritten)
    assert rewritten.read_bytes() == new.read_bytes()
    assert invoke("verify", str(old)).exit_code == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda raw: raw["trials"][1].update(body="0123456789abcdef"),
            "trial 2: body '0123456789abcdef' is not",
        ),
        (lambda raw: raw["trials"][0]["durations"].pop(), "trial 1: .* durations, fewer than its body holds"),
        (
            lambda raw: raw["trials"][0]["durations"].append(1.0),
            "trial 1: .* durations, more than its body holds",
        ),
    ],
)
def test_a_broken_reference_is_one_error_line_naming_the_file_and_trial(
    oracle_run: ExportedRun, tmp_path: Path, change: Any, message: str
) -> None:
    path = tmp_path / "broken.castbench.json.gz"
    write_export(oracle_run, path)
    raw = _raw(path)
    change(raw)
    _write_raw(path, raw)
    with pytest.raises(ArchiveError, match=f"^{path}: {message}"):
        read_export(path)
    result = invoke("import", str(path), "--db", sqlite_url(tmp_path / "other.db"))
    assert result.exit_code == 2 and result.output.startswith(f"error: {path}: trial"), result.output
    assert len(result.output.strip().splitlines()) == 1
