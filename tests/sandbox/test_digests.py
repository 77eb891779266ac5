"""A store record changed after castbench wrote it fails `castbench verify`: castbench keeps a
digest of every record it stores outside the store (`castbench._records.store.digests`), and the
replacement that replays as stored (another run's passing trial of the same task) differs from
it. Where castbench stores and exports results is on its record (`castbench._base.places`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._base import places
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench.domain import load_domain
from tests.support import invoke, sqlite_url


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv(places.STATE_ENV, str(folder))
    return folder


def _task() -> str:
    return next(task.id for task in load_domain("retail").tasks("test") if task.outcome == "change")


def test_an_overwritten_record_fails_verify(tmp_path: Path, state: Path) -> None:
    db = tmp_path / "shared.db"
    failing = evaluate(
        domains="retail", policy="scripted:lookup-refuse", trials=1, tasks=[_task()], db=sqlite_url(db)
    )
    passing = evaluate(domains="retail", policy="oracle", trials=1, tasks=[_task()], db=sqlite_url(db))
    failed_id, passed_id = failing.outcome.run_id, passing.outcome.run_id
    assert invoke("verify", failed_id, "--db", str(db)).exit_code == 0
    store = ResultsStore(sqlite_url(db))
    with store.db.transaction() as execute:
        record, reward = execute(
            "SELECT record_json, reward FROM trial WHERE run_id = :run", {"run": passed_id}
        ).fetchone()
        assert reward == 1.0
        execute(
            "UPDATE trial SET record_json = :record, reward = :reward WHERE run_id = :run",
            {"record": record, "reward": reward, "run": failed_id},
        )
    result = invoke("verify", failed_id, "--db", str(db))
    assert result.exit_code == 1, result.output
    assert "differ from the digest castbench kept" in result.output and _task() in result.output
    untouched = invoke("verify", passed_id, "--db", str(db))
    assert untouched.exit_code == 0 and "no digest" not in untouched.output, untouched.output


def test_a_store_without_digests_here_says_so(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A colleague's store (or one written before digests): verified by replay, and the output
    says its records were not checked against a digest."""
    db = tmp_path / "theirs.db"
    run = evaluate(domains="retail", policy="oracle", trials=1, tasks=[_task()], db=sqlite_url(db))
    monkeypatch.setenv(places.STATE_ENV, str(tmp_path / "another-machine"))
    result = invoke("verify", run.outcome.run_id, "--db", str(db))
    assert result.exit_code == 0, result.output
    assert "1 stored record(s) have no digest on this machine" in result.output


def test_castbench_records_its_stores_and_exports(tmp_path: Path, state: Path) -> None:
    db = tmp_path / "anywhere" / "x.sqlite"
    db.parent.mkdir()  # castbench creates no folder for a --db other than its default
    run = evaluate(domains="retail", policy="oracle", trials=1, tasks=[_task()], db=sqlite_url(db))
    export = tmp_path / "elsewhere" / "mine.castbench.json.gz"
    assert invoke("export", run.outcome.run_id, "--db", str(db), "--out", str(export)).exit_code == 0
    recorded = places.recorded_places()
    assert str(db.resolve()) in recorded and str(export.resolve()) in recorded
    assert (state / "results-places").is_file()
