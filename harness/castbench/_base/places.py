"""Where castbench keeps what no agent may reach: a per-user record, outside every results store,
of each store and export castbench has written or read on this machine.

Why a record: an agent's sandbox is an allow-list, but an agent may declare wide reads
(`sandbox_read = ("/",)`), and a store or export can lie anywhere (`--db ~/evals/x.db`, an
export mailed in and read from Downloads). The sandbox cannot search the whole disk for them at
each worker start; it can refuse every place castbench itself has used, whatever its name, and
the standard places on top (`castbench._agents.sandbox`). The record lives in castbench's state
folder, which the sandbox keeps out too, so an agent can neither read nor erase it.

The state folder is `$CASTBENCH_STATE_DIR`, else `$XDG_STATE_HOME/castbench`, else
`~/.local/state/castbench`. Writes append one line under an exclusive `flock` (many castbench
processes, one file); readers drop the lines of paths that no longer exist.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

__all__ = ["STATE_ENV", "record_place", "record_port", "recorded_places", "recorded_ports", "state_dir"]

STATE_ENV = "CASTBENCH_STATE_DIR"
_PLACES = "results-places"
_PORTS = "results-ports"
_COMPACT_AT = 4096
"""Lines in the record past which appending also drops the places that no longer exist."""


def state_dir() -> Path:
    """castbench's per-user state folder (created on first use). Resolved once per setting of
    the variables that name it: the store asks for it at every trial it keeps, and resolving
    the path (a system call per component) was a tenth of storing a trial."""
    return _resolved(
        os.environ.get(STATE_ENV, "").strip(),
        os.environ.get("XDG_STATE_HOME", "").strip(),
        os.environ.get("HOME", ""),
    )


@lru_cache(maxsize=8)
def _resolved(explicit: str, xdg: str, home: str) -> Path:
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state"
    return (base / "castbench").resolve()


@contextmanager
def _locked(name: str) -> Iterator[int]:
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / name, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def _lines(fd: int) -> list[str]:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0).decode(errors="replace").splitlines() if size else []


_HERE: dict[str, set[str]] = {_PLACES: set(), _PORTS: set()}
"""What this process recorded: known to its own sandboxes even where the state folder cannot be written."""


def _append(name: str, line: str) -> None:
    """Add `line` unless it is there already (best effort: a state folder castbench cannot write,
    a read-only home, leaves the record as it was; this process still knows, and the standard
    places are refused anyway)."""
    if line in _HERE[name]:
        return
    _HERE[name].add(line)
    try:
        with _locked(name) as fd:
            lines = _lines(fd)
            if line in lines:
                return
            if name == _PLACES and len(lines) >= _COMPACT_AT:
                kept = [old for old in lines if old and os.path.lexists(old)]
                os.ftruncate(fd, 0)
                os.write(fd, "".join(old + "\n" for old in kept).encode())
            os.write(fd, (line + "\n").encode())
    except OSError:
        return


def _read(name: str) -> set[str]:
    try:
        with _locked(name) as fd:
            return {line for line in _lines(fd) if line} | _HERE[name]
    except OSError:
        return set(_HERE[name])


def record_place(path: str | os.PathLike[str]) -> None:
    """Remember that `path` (a SQLite store, an export) holds castbench results."""
    _append(_PLACES, os.path.realpath(path))


def record_port(port: int) -> None:
    """Remember that a results server (Postgres) listens on TCP `port`."""
    _append(_PORTS, str(int(port)))


_CACHED: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}


def recorded_places() -> frozenset[str]:
    """Every recorded place that still existed when the record last changed (read again only
    then: a worker start pays a `stat`, not a pass over the record)."""
    try:
        status = (state_dir() / _PLACES).stat()
        key = (status.st_mtime_ns, status.st_size + len(_HERE[_PLACES]))
    except OSError:
        key = (0, len(_HERE[_PLACES]))
    cached = _CACHED.get(_PLACES)
    if cached is None or cached[0] != key:
        cached = (key, frozenset(path for path in _read(_PLACES) if os.path.lexists(path)))
        _CACHED[_PLACES] = cached
    return cached[1]


def recorded_ports() -> frozenset[int]:
    return frozenset(int(line) for line in _read(_PORTS) if line.isdigit())
