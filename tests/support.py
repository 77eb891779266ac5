"""Small helpers every test folder shares (the fixtures built on them live in `tests/conftest.py`).

Import them as `from tests.support import invoke, sqlite_url`; they hold no state of their own.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

__all__ = ["DOMAINS", "invoke", "sqlite_url", "without_durations"]

DOMAINS = ("airline", "retail", "telecom", "telehealth")
"""The built-in domains, in the order the summaries list them."""


def sqlite_url(path: Path) -> str:
    """The URL of a SQLite database file (the store's `--db`)."""
    return f"sqlite:///{path}"


def invoke(*args: str, env: dict[str, str | None] | None = None, width: int = 200) -> Result:
    """`castbench ARGS` in process, as a user types it: a terminal `width` columns wide (by default
    wide enough for unwrapped tables) and no `CASTBENCH_DB` from the caller's environment unless
    `env` sets it."""
    from castbench._cli.app import app

    return CliRunner().invoke(
        app, list(args), env={"COLUMNS": str(width), "CASTBENCH_DB": None, **(env or {})}
    )


DURATIONS = frozenset({"duration_s", "policy_s", "critic_s", "user_s", "total_s", "latency_s"})
"""Fields of a trial record that measure time: the only ones two copies of a trial may differ in."""


def process_ended(pid: int, within: float = 20.0) -> bool:
    """Process `pid` has exited (reaped, or a zombie waiting to be) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def without_durations(value: Any) -> Any:
    """A dumped record (`model_dump(mode="json")`) with every duration field left out, at any depth."""
    if isinstance(value, dict):
        return {key: without_durations(item) for key, item in value.items() if key not in DURATIONS}
    if isinstance(value, list):
        return [without_durations(item) for item in value]
    return value


def ctrl_c_delivered() -> None:
    """`preexec_fn` for a child a test sends Ctrl-C to: delivered as a terminal delivers it. A test
    run started in the background by a non-interactive shell (`.ci/run &`) has SIGINT ignored, and a
    child inherits an ignored or blocked signal across exec: Python then leaves it ignored, and the
    command never sees the Ctrl-C (it ran on and exited 0)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
