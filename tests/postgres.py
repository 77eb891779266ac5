"""A real, throwaway Postgres server for tests and benches: `initdb` + `pg_ctl` on a free loopback
port, in a temporary directory, removed afterwards.

Postgres refuses to run as root: as root the server runs as the `postgres` user (`runuser`), on a
directory that user owns; as anyone else it runs as that user. Without the server binaries the
callers skip, naming what is missing.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["PostgresUnavailable", "new_database", "postgres_server"]


class PostgresUnavailable(RuntimeError):
    """Why no server can be started here (the tests skip with this reason)."""


def _binary(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))), None)
    if found is None:
        raise PostgresUnavailable(f"no Postgres server binary '{name}' on PATH or in /usr/lib/postgresql")
    return found


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    if shutil.which("runuser") is None:
        raise PostgresUnavailable("running as root without `runuser` to start Postgres as `postgres`")
    return ["runuser", "-u", "postgres", "--", *command]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yields its admin URL (`postgresql://postgres@127.0.0.1:PORT/postgres`)."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    root = Path(tempfile.mkdtemp(prefix="castbench-pg-", dir="/tmp"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    port = _free_port()
    try:
        subprocess.run(
            _as_server_user([initdb, "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"]),
            check=True,
            capture_output=True,
            timeout=120,
        )
        options = f"-h 127.0.0.1 -p {port} -k {root} -c fsync=off -c max_connections=200"
        subprocess.run(
            _as_server_user([pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"]),
            check=True,
            capture_output=True,
            timeout=120,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        detail = getattr(exc, "stderr", b"") or b""
        raise PostgresUnavailable(
            f"could not start Postgres: {exc} {detail.decode(errors='replace')}"
        ) from exc
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)


def new_database(admin_url: str) -> str:
    """A fresh, empty database on the server; its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return admin_url.rsplit("/", 1)[0] + f"/{name}"
