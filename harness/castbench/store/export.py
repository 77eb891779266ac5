"""Exported runs: one portable, compressed file per run (`NAME.castbench.json.gz`).

An export holds the run row, its config and meta, and every trial record: everything the store
knows about the run, so a leaderboard, a gate or a viewer can be rebuilt from the file alone and
the run can be imported into another database. The bytes depend only on the run's content
(sorted keys, gzip with no timestamp or file name), so re-exporting an unchanged run changes
nothing in git. Durations are kept to the microsecond: the clock's digits beyond that are
noise, and they made up a third of a compressed export.

The file's `format_version` is the envelope's; the config and each trial record inside carry their
own (`castbench.records.migrations`), so an export read years later is migrated record by record,
and one from a newer castbench is refused with one line naming the file.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ValidationError

from castbench.places import record_place
from castbench.records.config import RUN_CONFIG, RunConfig, read_config
from castbench.records.migrations import RecordShape, RecordVersionError
from castbench.records.trial import TRIAL_RECORD, TrialRecord
from castbench.store import ResultsStore, StoreError

__all__ = [
    "EXPORT_SUFFIX",
    "ArchiveError",
    "ExportedRun",
    "RunFormat",
    "format_names",
    "load_format",
    "reader_for",
    "export_run",
    "is_export",
    "read_export",
    "write_export",
]

EXPORT_SUFFIX = ".castbench.json.gz"
FORMAT: Final = "castbench-run"
EXPORT = RecordShape("castbench export", key="format_version")
"""The envelope (run row, meta, the records' places): version 1 since the first export."""
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
        config=read_config(row.config_json, f"run {row.id}"),
        meta=json.loads(row.meta_json),
        trials=store.trials(row.id),
    )


def write_export(exported: ExportedRun, path: Path) -> int:
    """Write `exported` to `path`; returns the file's size in bytes."""
    data = exported.model_dump(mode="json", exclude={"trials"})
    # the config as it was written (by an older castbench, without later fields): its hash holds
    data["config"] = RUN_CONFIG.stamp(exported.config.model_dump(mode="json", exclude_unset=True))
    # records in Python's types: json escapes what Pydantic's JSON mode would change (a lone
    # surrogate in a key, NaN), so an agent's output reads back as it was (`castbench.lossless`)
    data["trials"] = [TRIAL_RECORD.stamp(record.model_dump(mode="python")) for record in exported.trials]
    # keys in the order written (no sorting): tool arguments as the agent gave them, the
    # conversation as it saw it; the order is still deterministic (model fields, agents' dicts)
    text = json.dumps(_round_durations(data), separators=(",", ":"))
    packed = gzip.compress(text.encode(), compresslevel=9, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(packed)
    record_place(path)
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
    record_place(path)  # no agent reaches an export castbench has read
    try:
        raw = json.loads(gzip.decompress(data))
    except (OSError, ValueError, EOFError) as exc:
        raise ArchiveError(f"{path} is not a gzip-compressed castbench export: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise ArchiveError(f'{path} is not a castbench export (no "format": "{FORMAT}")')
    try:
        return ExportedRun.model_validate(_current(raw, str(path)))
    except RecordVersionError as exc:
        raise ArchiveError(str(exc)) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ArchiveError(f"{path}: {where}: {first['msg']}") from exc


def _current(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """An export's JSON with its envelope, config and trial records in the current shapes."""
    data = EXPORT.upgrade(raw, where)
    if isinstance(data.get("config"), dict):
        data["config"] = RUN_CONFIG.upgrade(data["config"], f"{where}: config")
    if isinstance(data.get("trials"), list):
        data["trials"] = [
            TRIAL_RECORD.upgrade(trial, f"{where}: trial {index + 1}") if isinstance(trial, dict) else trial
            for index, trial in enumerate(data["trials"])
        ]
    return data


@dataclass(frozen=True)
class RunFormat:
    """A file format for runs besides castbench's own export: how `castbench export --format NAME`
    writes one and, where it has a reader, how `castbench import FILE` reads one (by its suffix).
    Formats register under the entry-point group `castbench.formats` (Inspect's log in
    `castbench.publish`, τ²'s Results in its pack), so the core names no pack."""

    suffix: str
    write: Callable[[ExportedRun, Path], int]
    read: Callable[[Path], ExportedRun] | None = None


_FORMAT_GROUP = "castbench.formats"


def format_names() -> list[str]:
    return sorted(point.name for point in entry_points(group=_FORMAT_GROUP))


def load_format(name: str) -> RunFormat:
    """The format `name` registers; `ArchiveError`, one line, when none does or its extra is missing."""
    found = list(entry_points(group=_FORMAT_GROUP, name=name))
    if not found:
        raise ArchiveError(f"unknown --format '{name}': one of castbench, {', '.join(format_names())}")
    try:
        run_format: RunFormat = found[0].load()
    except ImportError as exc:
        extra = ",".join(found[0].extras) or name
        raise ArchiveError(f"--format {name} needs its extra: pip install -e '.[{extra}]' ({exc})") from exc
    return run_format


def reader_for(path: Path) -> Callable[[Path], ExportedRun] | None:
    """The reader of a registered format whose files end like `path` (those whose extra is not
    installed are passed over); None for none."""
    for name in format_names():
        try:
            run_format = load_format(name)
        except ArchiveError:
            continue
        if run_format.read is not None and path.name.endswith(run_format.suffix):
            return run_format.read
    return None
