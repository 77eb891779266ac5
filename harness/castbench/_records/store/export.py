"""Exported runs: one portable, compressed file per run (`NAME.castbench.json.gz`).

An export holds the run row, its config and meta, and every trial record: everything the store
knows about the run, so a leaderboard, a gate or a viewer can be rebuilt from the file alone and
the run can be imported into another database. The bytes depend only on the run's content
(sorted keys, gzip with no timestamp or file name), so re-exporting an unchanged run changes
nothing in git. Durations are kept to the microsecond: the clock's digits beyond that are
noise, and they made up a third of a compressed export.

The file's `format_version` is the envelope's; the config and each trial record inside carry their
own (`castbench._records.migrations`), so an export read years later is migrated record by record,
and one from a newer castbench is refused with one line naming the file.

Identical trials are stored once (envelope version 2). The trials of a deterministic agent differ
only in their index, seed and clock readings, and a long trial is far beyond gzip's 32 KB window,
so an export of 8 trials per task held each conversation 8 times (a committed floor run was
6.5 MB). A version-2 file keeps each distinct trial body once under `bodies`, keyed by a digest
of its text (a record with `trial_index`, `seed` taken out and its durations zeroed), and each
trial as `{"body": KEY, "trial_index": ..., "seed": ..., "durations": [...]}`: its durations in
the order the body's walk meets them. A version-1 file's inline records are version-2 trials as
they stand, so both read; a reference is rebuilt into the record it was, to the byte.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import struct
import tempfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import IO, Any, Final, Literal, Protocol, overload

from pydantic import BaseModel, ValidationError

from castbench._base.defaults import EXPORT_SUFFIX
from castbench._base.places import record_place
from castbench._records.config import RUN_CONFIG, RunConfig, read_config
from castbench._records.migrations import RecordShape, RecordVersionError
from castbench._records.store import ResultsStore, StoreError
from castbench._records.trial import TRIAL_RECORD, TrialRecord

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
    "stream_run",
    "StoredTrials",
    "read_export",
    "write_export",
]

FORMAT: Final = "castbench-run"


def _inline_trials(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: every trial inline, no `bodies`; version 2 reads such trials as they stand."""
    return data


EXPORT = RecordShape("castbench export", migrations=(_inline_trials,), key="format_version")
"""The envelope (run row, meta, the records' places). Version 2: trials may name a shared body
(`bodies`) instead of holding their record; version 1 (inline records only) is a valid version 2."""
_DURATION_FIELDS = frozenset({"duration_s", "policy_s", "critic_s", "user_s", "total_s", "latency_s"})


class ArchiveError(ValueError):
    """An export that cannot be read or imported; names the file and the reason."""


class ExportedRun(BaseModel):
    format: Literal["castbench-run"] = FORMAT
    format_version: Literal[2] = 2
    run_id: str
    created: datetime
    status: str
    config_hash: str
    config: RunConfig
    meta: dict[str, Any]
    trials: Sequence[TrialRecord]
    """A list, or for a run read by `stream_run` its `StoredTrials`: read from the store each time
    they are iterated, one at a time."""


class StoredTrials(Sequence[TrialRecord]):
    """A run's trials as the store gives them (by domain, task and trial index), read one at a
    time each time they are iterated: a writer that walks them once holds one record, not the
    run (#59). Its length is counted by the database; an index reads up to that trial."""

    def __init__(self, store: ResultsStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self._count: int | None = None

    def __iter__(self) -> Iterator[TrialRecord]:
        return self.store.iter_trials(self.run_id)

    def __len__(self) -> int:
        if self._count is None:
            self._count = self.store.count_trials(self.run_id)
        return self._count

    @overload
    def __getitem__(self, index: int) -> TrialRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[TrialRecord]: ...

    def __getitem__(self, index: int | slice) -> TrialRecord | Sequence[TrialRecord]:
        if isinstance(index, slice):
            return list(self)[index]
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(index)
        for at, record in enumerate(self):
            if at == position:
                return record
        raise IndexError(index)  # the run changed while it was read


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


def stream_run(store: ResultsStore, ref: str) -> ExportedRun:
    """`export_run` with its trials left in the store (`StoredTrials`): what `castbench export`,
    `view` and `verify` write or check one trial at a time, so their memory does not grow with
    the run."""
    try:
        row = store.run(ref)
    except StoreError as exc:
        raise ArchiveError(str(exc)) from exc
    return ExportedRun.model_construct(
        run_id=row.id,
        created=row.created,
        status=row.status,
        config_hash=row.config_hash,
        config=read_config(row.config_json, f"run {row.id}"),
        meta=json.loads(row.meta_json),
        trials=StoredTrials(store, row.id),
    )


def write_export(exported: ExportedRun, path: Path) -> int:
    """Write `exported` to `path`; returns the file's size in bytes. Trials that differ only in
    their index, seed and durations share one stored body (see the module's docstring). The
    trials are read once, in order, and each body is compressed into the file as it is met: what
    is held is a digest per body and a short reference per trial, not the run's text."""
    data = exported.model_dump(mode="json", exclude={"trials"})
    # the config as it was written (by an older castbench, without later fields): its hash holds
    data["config"] = RUN_CONFIG.stamp(exported.config.model_dump(mode="json", exclude_unset=True))
    head = json.dumps(_round_durations(data), separators=(",", ":"))
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.part")  # renamed once whole: no half-written export
    # the references come after every body: they wait in a file of their own, not in memory
    with _replacing(path, partial) as handle, tempfile.TemporaryFile("w+", encoding="ascii") as trials:
        packer = GzipStream(handle)
        packer.write(f'{head[:-1]},"bodies":{{')
        bodies: dict[str, str] = {}  # short key -> the body's whole digest
        first = True
        for record in exported.trials:
            # records in Python's types: json escapes what Pydantic's JSON mode would change (a lone
            # surrogate in a key, NaN), so an agent's output reads back as it was (`castbench._base.lossless`)
            raw = TRIAL_RECORD.stamp(record.model_dump(mode="python"))
            index, seed = raw.pop("trial_index"), raw.pop("seed")
            durations: list[float] = []
            # keys in the order written (no sorting): tool arguments as the agent gave them, the
            # conversation as it saw it; the order is still deterministic (model fields, agents' dicts)
            text = json.dumps(_split_durations(raw, durations), separators=(",", ":"))
            digest = hashlib.sha256(text.encode()).hexdigest()
            key = _body_key(digest, bodies)
            if key not in bodies:
                packer.write(("," if bodies else "") + f'"{key}":{text}')
                bodies[key] = digest
            reference = {"body": key, "trial_index": index, "seed": seed, "durations": durations}
            trials.write(("" if first else ",") + json.dumps(reference, separators=(",", ":")))
            first = False
        packer.write('},"trials":[')
        trials.seek(0)
        while block := trials.read(1 << 20):
            packer.write(block)
        packer.write("]}")
        size = packer.close()
    record_place(path)
    return size


@contextmanager
def _replacing(path: Path, partial: Path) -> Iterator[IO[bytes]]:
    """A file written at `partial` that replaces `path` when the block ends, or is removed when
    it raises."""
    try:
        with partial.open("wb") as handle:
            yield handle
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


_GZIP_HEADER: Final = gzip.compress(b"", compresslevel=9, mtime=0)[:10]
"""The header `gzip.compress` writes (its OS byte is the Python's): a stream's bytes are its bytes."""


class _Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


class GzipStream:
    """Text compressed into a binary file as it comes, the bytes `gzip.compress(text, 9, mtime=0)`
    gives for the whole text (one deflate stream, no file name, no time), without holding it."""

    def __init__(self, out: _Sink) -> None:
        self.out = out
        self.crc = 0
        self.length = 0
        self.size = 0
        self._deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._emit(_GZIP_HEADER)

    def _emit(self, data: bytes) -> None:
        if data:
            self.out.write(data)
            self.size += len(data)

    def write(self, text: str) -> None:
        data = text.encode()
        self.crc = zlib.crc32(data, self.crc)
        self.length += len(data)
        self._emit(self._deflate.compress(data))

    def close(self) -> int:
        """Ends the stream; the bytes written in all."""
        self._emit(self._deflate.flush())
        self._emit(struct.pack("<LL", self.crc, self.length & 0xFFFFFFFF))
        return self.size


def _body_key(digest: str, bodies: dict[str, str]) -> str:
    """The key a body is stored under: 16 hex digits of the SHA-256 of its (ASCII) text (`digest`),
    64 bits, so no two bodies of a run meet by chance; the whole digest for a body whose short key
    another body holds (`bodies`: the whole digest of the body under each key)."""
    return digest[:16] if bodies.get(digest[:16], digest) == digest else digest


def _split_durations(value: Any, durations: list[float]) -> Any:
    """`value` with each duration (a float under a duration field's name) rounded to the
    microsecond, appended to `durations` and replaced by 0.0: what is left of a trial is the same
    for every trial that played the same conversation. `_join_durations` walks it back."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if key in _DURATION_FIELDS and isinstance(item, float):
                durations.append(round(item, 6))
                out[key] = 0.0
            else:
                out[key] = _split_durations(item, durations)
        return out
    if isinstance(value, list):
        return [_split_durations(item, durations) for item in value]
    return value


def _join_durations(value: Any, durations: Iterator[float]) -> Any:
    """A stored body with its durations put back in the order `_split_durations` took them
    (a new object: the shared body is left as it is)."""
    if isinstance(value, dict):
        return {
            key: next(durations)
            if key in _DURATION_FIELDS and isinstance(item, float)
            else _join_durations(item, durations)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_join_durations(item, durations) for item in value]
    return value


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
    """An export's JSON with its envelope, config and trial records in the current shapes, each
    trial that names a shared body rebuilt into its record."""
    data = EXPORT.upgrade(raw, where)
    bodies = data.pop("bodies", None) or {}
    if not isinstance(bodies, dict):
        raise ArchiveError(f"{where}: bodies: not an object of trial bodies")
    if isinstance(data.get("config"), dict):
        data["config"] = RUN_CONFIG.upgrade(data["config"], f"{where}: config")
    if isinstance(data.get("trials"), list):
        data["trials"] = [
            TRIAL_RECORD.upgrade(
                _rebuilt(trial, bodies, f"{where}: trial {index + 1}"), f"{where}: trial {index + 1}"
            )
            if isinstance(trial, dict)
            else trial
            for index, trial in enumerate(data["trials"])
        ]
    return data


def _rebuilt(trial: dict[str, Any], bodies: dict[str, Any], where: str) -> dict[str, Any]:
    """A stored trial as its record: as it stands when inline, else its body with its index, seed
    and durations put back."""
    if "body" not in trial:
        return trial
    body = bodies.get(trial["body"])
    if not isinstance(body, dict):
        raise ArchiveError(f"{where}: body {trial['body']!r} is not among the file's bodies")
    durations = trial.get("durations", [])
    if not isinstance(durations, list):
        raise ArchiveError(f"{where}: durations: not a list")
    remaining = iter(durations)
    try:
        record = _join_durations(body, remaining)
    except StopIteration:
        raise ArchiveError(f"{where}: {len(durations)} durations, fewer than its body holds") from None
    if next(remaining, None) is not None:
        raise ArchiveError(f"{where}: {len(durations)} durations, more than its body holds")
    return {**record, "trial_index": trial.get("trial_index"), "seed": trial.get("seed")}


@dataclass(frozen=True)
class RunFormat:
    """A file format for runs besides castbench's own export: how `castbench export --format NAME`
    writes one and, where it has a reader, how `castbench import FILE` reads one (by its suffix).
    Formats register under the entry-point group `castbench.formats` (Inspect's log in
    `castbench._results.publish`, τ²'s Results in its pack), so the core names no pack."""

    suffix: str
    write: Callable[[ExportedRun, Path], int]
    read: Callable[[Path], ExportedRun] | None = None
    accepts: Callable[[Path], bool] | None = None
    """Whether a file with the suffix is of this format (read from its first bytes), where
    several formats share a suffix (τ²'s Results and τ-bench's results are both `.json`); a format
    without it takes every file with its suffix that no format before it accepted."""


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
    """The reader of a registered format whose files end like `path` and that accepts it (those
    whose extra is not installed are passed over): formats that say what they accept first, then
    the others; None for none."""
    found = []
    for name in format_names():
        try:
            run_format = load_format(name)
        except ArchiveError:
            continue
        if run_format.read is not None and path.name.endswith(run_format.suffix):
            found.append(run_format)
    for run_format in sorted(found, key=lambda fmt: fmt.accepts is None):
        if run_format.accepts is None or run_format.accepts(path):
            return run_format.read
    return None
