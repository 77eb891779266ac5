"""A SQLite store file written before the store ran on the DB-API alone opens, reads and resumes
unchanged, and a new file gets the same schema, statement for statement. The file is rebuilt from
`fixtures/main-4b976c6.sql`, the `sqlite3 .dump` of a retail oracle run of 2 trials that castbench
wrote at 4b976c6 (its schema SQLAlchemy's): a dump, because a store file in the test suite's
package would be results an agent loaded from `tests` may not be granted."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from castbench._records.store import ResultsStore, last_written
from tests.support import invoke, sqlite_url, without_durations

FIXTURE = Path(__file__).parent / "fixtures" / "main-4b976c6.sql"
RUN = "r-3cee0f79b7ef"
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}"


def _schema(path: Path) -> list[tuple[str, str, str, str | None]]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
        return list(rows)


@pytest.fixture
def old(tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:
        connection.executescript(FIXTURE.read_text(encoding="utf-8"))
        connection.execute("PRAGMA journal_mode=WAL")  # as castbench left it
    connection.close()
    return path


def test_a_new_file_gets_the_schema_earlier_files_have(tmp_path: Path, old: Path) -> None:
    ResultsStore(sqlite_url(tmp_path / "new.db"))
    new = _schema(tmp_path / "new.db")
    assert new == _schema(old)
    assert {name for kind, name, _, _ in new if kind == "table"} == {
        "run",
        "trial",
        "worker",
        "claim",
        "run_lease",
        "cache",
    }
    with sqlite3.connect(tmp_path / "new.db") as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_file_written_before_reads_and_resumes(old: Path) -> None:
    before = _schema(old)
    store = ResultsStore(sqlite_url(old))
    (run,) = store.runs()
    assert (run.id, run.status) == (RUN, "complete")
    assert run.created == datetime(2026, 12, 7, 15, 29, 20, 655621, tzinfo=UTC)
    assert last_written(run) == datetime(2026, 12, 7, 15, 29, 20, 824240, tzinfo=UTC)
    records = store.trials(RUN)
    assert [(r.task_id, r.trial_index, r.status, r.reward) for r in records] == [
        ("retail-test-0001", 0, "scored", 1.0),
        ("retail-test-0001", 1, "scored", 1.0),
    ]
    assert records[0].seed == 4653178378656234734  # a 63-bit seed, as stored
    assert store.scored_keys(RUN) == {("retail", "retail-test-0001", 0), ("retail", "retail-test-0001", 1)}
    assert store.trials_version(RUN) == (2, 2) and store.count_trials(RUN) == 2
    floors = "floors:ae0f3acdec7c9378f1c7b65ca15202b974f81b0e04e57707355aefeee80342f0"
    assert json.loads(store.cached(floors) or "null") is not None

    config = store.config(RUN)  # the same configuration resumes the run
    assert store.open_run(config, {}) == (RUN, True)
    store.hold(RUN)
    assert store.run(RUN).status == "complete"
    store.set_status(RUN, "running")
    assert store.run("latest").status == "running"  # this process holds it
    store.heartbeat(RUN)
    third = records[1].model_copy(update={"trial_index": 2})
    assert store.add_trial(RUN, third) and not store.add_trial(RUN, third)  # never stored twice
    store.release(RUN)
    store.set_status(RUN, "complete")
    assert store.trials_version(RUN) == (3, 3)
    assert _schema(old) == before  # nothing to bring up to date

    with sqlite3.connect(old) as connection:  # rows as the earlier castbench wrote them
        created, updated = connection.execute("SELECT created, updated FROM run").fetchone()
        (seed,) = connection.execute("SELECT seed FROM trial WHERE trial_index = 2").fetchone()
    assert created == "2026-12-07 15:29:20.655621"
    assert re.fullmatch(TIME, updated) and updated > created
    assert seed == third.seed


def test_the_commands_read_and_export_a_file_written_before(old: Path) -> None:
    listed = invoke("runs", "list", "--db", str(old), "--json")
    assert listed.exit_code == 0, listed.output
    (run,) = json.loads(listed.output)
    assert (run["id"], run["trials_stored"], run["status"]) == (RUN, 2, "complete")
    shown = invoke("runs", "show", RUN, "--db", str(old))
    assert shown.exit_code == 0 and "retail" in shown.output, shown.output
    out = old.with_name("run.castbench.json.gz")
    exported = invoke("export", RUN, "--db", str(old), "--out", str(out))
    assert exported.exit_code == 0, exported.output
    imported = invoke("import", str(out), "--db", str(old.with_name("copy.db")))
    assert imported.exit_code == 0, imported.output
    copied = ResultsStore(str(old.with_name("copy.db")))

    def dumped(store: ResultsStore) -> list[object]:
        return [without_durations(r.model_dump(mode="json")) for r in store.trials(RUN)]

    assert dumped(copied) == dumped(ResultsStore(str(old)))


def test_an_older_schema_gains_the_tables_and_columns_it_lacks(tmp_path: Path) -> None:
    """A file from before `run.updated`, `run_lease` and `cache` (the first schema's DDL)."""
    path = tmp_path / "first.db"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE run (id VARCHAR NOT NULL, created DATETIME NOT NULL, "
            "config_hash VARCHAR NOT NULL, config_json VARCHAR NOT NULL, meta_json VARCHAR NOT NULL, "
            "status VARCHAR NOT NULL, PRIMARY KEY (id))"
        )
        connection.execute(
            "INSERT INTO run VALUES ('r-1', '2025-01-02 03:04:05.000006', 'h', '{}', '{}', 'complete')"
        )
    store = ResultsStore(str(path))
    (run,) = store.runs()
    assert run.updated is None and last_written(run) == datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    tables = {name for kind, name, _, _ in _schema(path) if kind == "table"}
    assert tables == {"run", "trial", "worker", "claim", "run_lease", "cache"}
    with sqlite3.connect(path) as connection:
        assert "updated" in {row[1] for row in connection.execute("PRAGMA table_info(run)")}
    store.set_status("r-1", "interrupted")
    assert ResultsStore(str(path)).run("r-1").updated is not None


def test_a_read_only_file_written_before_is_read_and_left_as_it_was(old: Path) -> None:
    old.chmod(0o444)
    old.parent.chmod(0o555)
    try:
        store = ResultsStore(str(old), read_only=True)
        assert not store.writable and len(store.trials(RUN)) == 2
        store.cache("key", "kind", "1")  # not kept, and no error
        assert store.cached("key") is None
        assert sorted(p.name for p in old.parent.iterdir()) == ["old.db"]
    finally:
        old.parent.chmod(0o755)
        old.chmod(0o644)


def test_an_in_memory_store_is_one_database_for_every_thread(old: Path) -> None:
    import threading

    from castbench._records.config import RunConfig

    store = ResultsStore("sqlite://")
    (record,) = ResultsStore(str(old)).trials(RUN, trial_index=0)

    run_id, _ = store.open_run(RunConfig(domains={"retail": "1"}, policy="oracle"), {})
    thread = threading.Thread(target=store.add_trial, args=(run_id, record))
    thread.start()
    thread.join()
    assert [r.trial_index for r in store.trials(run_id)] == [0]


def test_the_engine_of_code_written_before_still_reads_with_a_deprecation_warning(old: Path) -> None:
    pytest.importorskip("sqlalchemy")  # no longer castbench's dependency: the caller's
    from sqlalchemy import text

    from castbench._base.deprecation import CastbenchDeprecationWarning

    with pytest.warns(CastbenchDeprecationWarning, match=r"ResultsStore\.db"):
        engine = ResultsStore(str(old)).engine
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM trial")).scalar_one() == 2
