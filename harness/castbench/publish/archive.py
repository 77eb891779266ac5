"""Exported runs: one portable, compressed file per run (`NAME.castbench.json.gz`).

An export holds the run row, its config and meta, and every trial record: everything the store
knows about the run, so a leaderboard, a gate or a viewer can be rebuilt from the file alone and
the run can be imported into another database. The bytes depend only on the run's content
(sorted keys, gzip with no timestamp or file name), so re-exporting an unchanged run changes
nothing in git. Durations are kept to the microsecond: the clock's digits beyond that are
noise, and they made up a third of a compressed export.
"""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ValidationError
from sqlmodel import Session, select

from castbench.publish.verify import verify_run
from castbench.runner.config import RunConfig
from castbench.runner.provenance import RunOrigin
from castbench.runner.records import TrialRecord
from castbench.store import ResultsStore, StoreError
from castbench.store.tables import RunRow, TrialRow

__all__ = [
    "EXPORT_SUFFIX",
    "ArchiveError",
    "ExportedRun",
    "ImportOutcome",
    "export_run",
    "import_run",
    "is_export",
    "read_export",
    "write_export",
]

EXPORT_SUFFIX = ".castbench.json.gz"
FORMAT: Final = "castbench-run"
_DURATION_FIELDS = frozenset({"duration_s", "policy_s", "critic_s", "user_s", "total_s", "latency_s"})


class ArchiveError(ValueError):
    """An export that cannot be read or imported; names the file and the reason."""


class ExportedRun(BaseModel):
    format: Literal["castbench-run"] = FORMAT
    format_version: Literal[1] = 1
    run_id: str
    created: datetime
    status: str
    config_hash: str
    config: RunConfig
    meta: dict[str, Any]
    trials: list[TrialRecord]


class ImportOutcome(BaseModel):
    run_id: str
    created_run: bool
    added_trials: int
    already_present: int
    clairvoyant: list[str] = []
    """The clairvoyant trials of a run imported with `force` (marked in its meta)."""
    clairvoyant_allowed: int = 0
    """Clairvoyant trials of a run whose agents declared privilege (they read the task): counted."""


def is_export(path: Path) -> bool:
    return path.name.endswith(".json.gz")


def export_run(store: ResultsStore, ref: str) -> ExportedRun:
    try:
        row = store.run(ref)
    except StoreError as exc:
        raise ArchiveError(str(exc)) from exc
    return ExportedRun(
        run_id=row.id,
        created=row.created,
        status=row.status,
        config_hash=row.config_hash,
        config=RunConfig.model_validate_json(row.config_json),
        meta=json.loads(row.meta_json),
        trials=store.trials(row.id),
    )


def write_export(exported: ExportedRun, path: Path) -> int:
    """Write `exported` to `path`; returns the file's size in bytes."""
    data = exported.model_dump(mode="json", exclude={"trials"})
    # the config as it was written (by an older castbench, without later fields): its hash holds
    data["config"] = exported.config.model_dump(mode="json", exclude_unset=True)
    # records in Python's types: json escapes what Pydantic's JSON mode would change (a lone
    # surrogate in a key, NaN), so an agent's output reads back as it was (`castbench.lossless`)
    data["trials"] = [record.model_dump(mode="python") for record in exported.trials]
    # keys in the order written (no sorting): tool arguments as the agent gave them, the
    # conversation as it saw it; the order is still deterministic (model fields, agents' dicts)
    text = json.dumps(_round_durations(data), separators=(",", ":"))
    packed = gzip.compress(text.encode(), compresslevel=9, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(packed)
    return len(packed)


def _round_durations(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: round(item, 6)
            if key in _DURATION_FIELDS and isinstance(item, float)
            else _round_durations(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_round_durations(item) for item in value]
    return value


def read_export(path: Path) -> ExportedRun:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ArchiveError(f"cannot read exported run {path}: {exc.strerror}") from exc
    try:
        raw = json.loads(gzip.decompress(data))
    except (OSError, ValueError, EOFError) as exc:
        raise ArchiveError(f"{path} is not a gzip-compressed castbench export: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise ArchiveError(f'{path} is not a castbench export (no "format": "{FORMAT}")')
    try:
        return ExportedRun.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ArchiveError(f"{path}: {where}: {first['msg']}") from exc


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
    revealed (`publish/forensics.py`) is refused as clairvoyant, naming the trials; with `force`
    it is imported, its meta's `clairvoyant` listing them."""
    submitted = RunOrigin(kind="submitted", file=source).model_dump()
    clairvoyant, allowed = _clairvoyant_trials(exported, force) if verify else ([], 0)
    created = False
    with Session(store.engine) as session:
        row = session.get(RunRow, exported.run_id)
        if row is None:
            session.add(
                RunRow(
                    id=exported.run_id,
                    created=exported.created,
                    config_hash=exported.config_hash,
                    config_json=exported.config.model_dump_json(),
                    meta_json=json.dumps(
                        {**exported.meta, "origin": submitted, **_marks(clairvoyant)}, sort_keys=True
                    ),
                    status=exported.status,
                )
            )
            session.commit()
            created = True
        elif row.config_hash != exported.config_hash:
            raise ArchiveError(
                f"{store.url} already holds a run '{exported.run_id}' with another configuration "
                f"(hash {row.config_hash[:12]} vs {exported.config_hash[:12]}); "
                "import it into another database"
            )
        present = {
            (domain, task_id, index): status
            for domain, task_id, index, status in session.exec(
                select(TrialRow.domain, TrialRow.task_id, TrialRow.trial_index, TrialRow.status).where(
                    TrialRow.run_id == exported.run_id
                )
            ).all()
        }
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


def _mark_submitted(store: ResultsStore, run_id: str, origin: dict[str, Any]) -> None:
    with Session(store.engine) as session:
        row = session.get(RunRow, run_id)
        if row is not None:
            row.meta_json = json.dumps({**json.loads(row.meta_json), "origin": origin}, sort_keys=True)
            session.add(row)
            session.commit()
