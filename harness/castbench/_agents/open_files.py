"""The regular files castbench's own process has open, read without opening any of them again.

Two consumers: the sandbox keeps them (and the folder of each SQLite database) out of an agent's
reach, and an agent's identity leaves the live results store out of its package's files.

Nothing here opens a path: closing any descriptor of a file drops every POSIX lock the process
holds on it, and those are SQLite's locks on a live store. Without them another process reading
the store (`runs list`, a dashboard) takes it for unused, rebuilds its `-shm` under the eval, and
the eval dies of a short read or a SIGBUS. Headers are read through the descriptor already open.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

__all__ = ["SQLITE_HEADER", "OpenFile", "open_files"]

SQLITE_HEADER = b"SQLite format 3\0"


@dataclass(frozen=True)
class OpenFile:
    path: str
    """Its real path."""
    identity: tuple[int, int]
    """Device and inode: the same file under any name."""
    sqlite: bool
    """A SQLite database (by its header)."""


def open_files() -> list[OpenFile]:
    """Every regular file open in this process now (none where `/proc` cannot tell)."""
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return []
    found = []
    for name in descriptors:
        try:
            fd = int(name)
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                continue
            path = os.readlink(f"/proc/self/fd/{fd}")
            if not path.startswith("/"):
                continue
            sqlite = _header(fd) == SQLITE_HEADER
        except (OSError, ValueError):  # closed meanwhile (the listing's own descriptor among them)
            continue
        found.append(OpenFile(os.path.realpath(path), (status.st_dev, status.st_ino), sqlite))
    return found


def _header(fd: int) -> bytes:
    try:
        return os.pread(fd, len(SQLITE_HEADER), 0)
    except OSError:  # opened for writing only (a lock file, a log)
        return b""
