"""One way every command reports a problem the user can fix: one line on stderr, exit 2.

Errors of input (a `--db` that cannot be used, an unknown domain, run, agent or task, a broken
task or export file, a record written by a newer castbench) reach here from any command through
`CastbenchGroup`, so no command needs its own copy of the handling and none of them shows a
traceback for them. Text from users and files is escaped: it is never read as Rich markup. A full
disk is one line too (what was stored is kept). Anything else is a bug of castbench's, and said
to be one: `internal error:` with the traceback kept in a file (exit 70), never dressed up as a
problem with the input.
"""

from __future__ import annotations

import errno
import os
import tempfile
import traceback
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer._click.exceptions import (  # typer's own copy of click, as its groups raise
    ClickException,
    UsageError,
)
from typer.core import TyperGroup

__all__ = [
    "AGENT_BROKEN",
    "EXIT_CODES",
    "INTERNAL_ERROR",
    "INTERRUPTED",
    "CastbenchGroup",
    "fail",
    "user_errors",
]


def user_errors() -> tuple[type[Exception], ...]:
    """The errors of input. Imported when a command fails, not at start-up: the store and the
    domains are slow to import and `castbench --help` needs neither."""
    from castbench._agents.registry import AgentSpecError
    from castbench._domain.domain import DomainDataError, ExpectedStateError
    from castbench._domain.registry import UnknownDomainError
    from castbench._domain.task import TaskFileError
    from castbench._records.migrations import RecordVersionError
    from castbench._records.store import StoreError

    return (
        AgentSpecError,
        DomainDataError,
        ExpectedStateError,
        RecordVersionError,
        StoreError,
        TaskFileError,
        UnknownDomainError,
    )


_stderr = Console(stderr=True)


def fail(message: object, *, code: int = 2, label: str = "error") -> NoReturn:
    """Print `label: message` (the message escaped, first line only when it is an exception's
    traceback-bearing text) and exit with `code`."""
    _stderr.print(f"[bold red]{label}:[/] {escape(str(message))}", soft_wrap=True)
    raise typer.Exit(code)


class CastbenchGroup(TyperGroup):
    """The command group of `castbench` and its sub-apps: turns user errors into one line."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as exc:  # a flag's value refused by its type: the one shape, not a box
            if exc.ctx is not None and exc.ctx.resilient_parsing:
                raise
            command = f"castbench {exc.ctx.command_path.removeprefix('castbench ')}: " if exc.ctx else ""
            message = exc.format_message().replace("\n", " ")
            hint = " (--help lists the options)" if "No such option" in message else ""
            fail(f"{command}{message}{hint}", code=exc.exit_code)
        except (typer.Exit, typer.Abort, ClickException):  # `--help`, a clean exit
            raise
        except Exception as exc:
            if isinstance(exc, user_errors()):
                fail(exc)
            if _disk_full(exc):
                fail(
                    f"no space left on the disk ({_first_line(exc)}); what was stored before this "
                    "is kept: free some space, then re-run the same command to resume"
                )
            path_problem = _path_problem(exc)
            if path_problem is not None:
                fail(path_problem)
            if os.environ.get("CASTBENCH_TRACEBACK"):
                raise
            fail(
                f"{type(exc).__name__}: {_first_line(exc)}. This is a bug in castbench, not in the "
                f"input; the traceback is in {_keep_traceback(exc)} (CASTBENCH_TRACEBACK=1 prints it)",
                code=INTERNAL_ERROR,
                label="internal error",
            )


INTERNAL_ERROR = 70
"""The exit code of a bug of castbench's (sysexits' EX_SOFTWARE): not an input error (2), nor
an incomplete run (1)."""
AGENT_BROKEN = 4
"""The exit code of an eval whose agent failed every trial it ran the same way (`agent_error`:
a wrong constructor or `propose` signature, a parameter it refuses): the run stopped early."""
INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C (what was stored is kept)."""

EXIT_CODES: dict[int, str] = {
    0: "done (gate: PASS)",
    1: "the run is incomplete: planned trials are unscored (gate: FAIL)",
    2: "bad input: one `error:` line says what is wrong and where",
    3: "gate: UNDECIDED (the run is too small to decide)",
    AGENT_BROKEN: "the agent failed every trial it ran the same way; the run stopped early",
    INTERNAL_ERROR: "internal error: a bug in castbench (the traceback is kept in a file)",
    INTERRUPTED: "interrupted (Ctrl-C); re-run the same command to resume",
}
"""Every exit code of `castbench`, as docs/exit-codes.md lists them (a test compares the two)."""


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc).strip() else repr(exc)


_PATH_ERRNOS = frozenset(
    {
        errno.ENAMETOOLONG,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.EEXIST,
        errno.EACCES,
        errno.EPERM,
        errno.ENOENT,
        errno.EROFS,
        errno.ELOOP,
    }
)
"""What a path given on the command line can be wrong by: too long, a folder where a file is
meant (or the reverse), not there, not writable."""
_SHOWN_PATH = 120


def shown_path(path: object) -> str:
    """A path as an error line shows it: whole when short, else its start and its end."""
    text = os.fsdecode(path) if isinstance(path, str | bytes) else str(path)
    if len(text) <= _SHOWN_PATH:
        return text
    return f"{text[:60]}…{text[-50:]} ({len(text):,} characters)"


def _path_problem(exc: BaseException) -> str | None:
    """One line for an error about a file or folder the user named (`--db` with a 300-character
    name, `--out` at a folder, `--junit` in a read-only place), found in `exc` or what it wraps;
    None when `exc` is not one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _PATH_ERRNOS and current.filename:
            what = os.strerror(current.errno) if current.errno else type(current).__name__
            return f"{shown_path(current.filename)}: {what.lower()}"
        current = current.__cause__ or current.__context__
    return None


def _disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or an error it wraps, is the disk running full (SQLite says so in words)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno == errno.ENOSPC:
            return True
        if "database or disk is full" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _keep_traceback(exc: BaseException) -> str:
    """Write the traceback to a file in the temporary folder; its path (or a note that it could
    not be written: then it is printed)."""
    text = "".join(traceback.format_exception(exc))
    try:
        handle, path = tempfile.mkstemp(prefix="castbench-traceback-", suffix=".txt")
        with os.fdopen(handle, "w") as file:
            file.write(text)
    except OSError:
        _stderr.print(text, markup=False, highlight=False)
        return "the lines above"
    return path
