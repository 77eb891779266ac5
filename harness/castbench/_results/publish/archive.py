"""Importing an exported run (`castbench import`): verified before it is stored, refused when a
check fails, marked when it is clairvoyant and forced in. The file format is
`castbench._records.store.export`."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from castbench._records.config import RUN_CONFIG
from castbench._records.provenance import RunOrigin
from castbench._records.store import ResultsStore, StoreError
from castbench._records.store.export import ArchiveError, ExportedRun
from castbench._records.store.store import StoredRun
from castbench._results.publish.verify import verify_run

__all__ = ["ImportOutcome", "import_run"]


class ImportOutcome(BaseModel):
    run_id: str
    created_run: bool
    added_trials: int
    already_present: int
    clairvoyant: list[str] = []
    """The clairvoyant trials of a run imported with `force` (marked in its meta)."""
    clairvoyant_allowed: int = 0
    """Clairvoyant trials of a run whose agents declared privilege (they read the task): counted."""


def import_run(
    store: ResultsStore,
    exported: ExportedRun,
    *,
    verify: bool = True,
    source: str | None = None,
    force: bool = False,
) -> ImportOutcome:
    """Load an exported run into `store`. With `verify` (the default) every trial is first
    re-executed and re-graded, and a run whose trials do not follow from their actions is refused
    (an `ArchiveError` naming them) before anything is written. Importing twice adds nothing;
    a run id that the store already holds with another configuration is refused rather than
    merged. `added_trials` counts the records actually stored.

    The stored run is marked submitted, from `source` (the file's name), whatever the file's meta
    says: its agents did not run here. A run played here that gains trials from a file becomes
    submitted too.

    A run of agents that declared no privilege whose passing trials acted on identifiers nobody
    revealed (`_results/publish/forensics.py`) is refused as clairvoyant, naming the trials; with `force`
    it is imported, its meta's `clairvoyant` listing them."""
    submitted = RunOrigin(kind="submitted", file=source).model_dump()
    clairvoyant, allowed = _clairvoyant_trials(exported, force) if verify else ([], 0)
    row = _stored_run(store, exported.run_id)
    if row is None:
        meta = {**exported.meta, "origin": submitted, **_marks(clairvoyant)}
        config = RUN_CONFIG.dumps(exported.config)
        meta_json = json.dumps(meta, sort_keys=True)
        run = StoredRun(
            exported.run_id, exported.created, exported.config_hash, config, meta_json, exported.status
        )
        store.add_run(run)
    elif row.config_hash != exported.config_hash:
        raise ArchiveError(
            f"{store.url} already holds a run '{exported.run_id}' with another configuration "
            f"(hash {row.config_hash[:12]} vs {exported.config_hash[:12]}); "
            "import it into another database"
        )
    created = row is None
    present = store.trial_statuses(exported.run_id)
    added = 0
    for record in exported.trials:
        status = present.get((record.domain, record.task_id, record.trial_index))
        if status == "scored" or (status is not None and record.status != "scored"):
            continue  # nothing new: the store's copy is as good as the file's
        added += store.add_trial(exported.run_id, record)
    if added and not created:
        _mark_submitted(store, exported.run_id, submitted)
    return ImportOutcome(
        run_id=exported.run_id,
        created_run=created,
        added_trials=added,
        already_present=len(exported.trials) - added,
        clairvoyant=clairvoyant,
        clairvoyant_allowed=allowed,
    )


def _clairvoyant_trials(exported: ExportedRun, force: bool) -> tuple[list[str], int]:
    """Verify the run (refused unless every check holds): the clairvoyant trials of one imported
    with `force`, and how many a privileged run has (allowed)."""
    report = verify_run(exported.run_id, exported.config, exported.trials, exported.config_hash)
    if not report.verified:
        raise ArchiveError(f"refused: {report.describe()}")
    found = report.forensics.clairvoyant if report.forensics is not None else []
    if not report.clairvoyant:
        return [], len(found)
    if not force:
        raise ArchiveError(f"refused as clairvoyant (--force imports it marked): {report.describe()}")
    return [trial.describe() for trial in found], 0


def _marks(clairvoyant: list[str]) -> dict[str, Any]:
    return {"clairvoyant": clairvoyant} if clairvoyant else {}


def _stored_run(store: ResultsStore, run_id: str) -> StoredRun | None:
    try:
        row = store.run(run_id)
    except StoreError:
        return None
    return row if row.id == run_id else None  # (a prefix of another run's id is not it)


def _mark_submitted(store: ResultsStore, run_id: str, origin: dict[str, Any]) -> None:
    row = _stored_run(store, run_id)
    if row is not None:
        store.update_run(
            run_id, meta_json=json.dumps({**json.loads(row.meta_json), "origin": origin}, sort_keys=True)
        )
