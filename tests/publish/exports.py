"""Real runs exported to files: whole retail test split with 2 trials (eligible for a board),
and a 3-task subset (not eligible)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run, write_export
from castbench._run.api import evaluate
from tests.support import sqlite_url


@dataclass(frozen=True)
class Exports:
    db: str
    root: Path
    """A project folder whose results/ holds the exports."""
    noisy: Path
    oracle: Path
    subset: Path
    run_ids: dict[str, str]


@pytest.fixture(scope="session")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Exports:
    root = tmp_path_factory.mktemp("project")
    db = sqlite_url(root / "runs.db")
    store = ResultsStore(db)
    paths: dict[str, Path] = {}
    run_ids: dict[str, str] = {}
    for name, options in {
        "noisy": {"policy": "scripted:noisy"},
        "oracle": {"policy": "oracle"},
        "subset": {
            "policy": "scripted:noisy",
            "tasks": ["retail-test-0001", "retail-test-0002", "retail-test-0003"],
        },
    }.items():
        result = evaluate(db=db, domains="retail", trials=2, seed=0, **options)  # type: ignore[arg-type]
        run_ids[name] = result.outcome.run_id
        paths[name] = root / "results" / f"{name}.castbench.json.gz"
        write_export(export_run(store, result.outcome.run_id), paths[name])
    return Exports(
        db=db,
        root=root,
        noisy=paths["noisy"],
        oracle=paths["oracle"],
        subset=paths["subset"],
        run_ids=run_ids,
    )
