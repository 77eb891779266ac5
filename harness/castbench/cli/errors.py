"""One way every command reports a problem the user can fix: one line on stderr, exit 2.

Errors of input (a `--db` that cannot be used, an unknown domain, run, agent or task, a broken
task or export file) reach here from any command through `CastbenchGroup`, so no command needs its
own copy of the handling and none of them shows a traceback for them. Text from users and files
is escaped: it is never read as Rich markup.
"""

from __future__ import annotations

from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

__all__ = ["CastbenchGroup", "fail", "user_errors"]


def user_errors() -> tuple[type[Exception], ...]:
    """The errors of input. Imported when a command fails, not at start-up: the store and the
    domains are slow to import and `castbench --help` needs neither."""
    from castbench.agents.registry import AgentSpecError
    from castbench.domain import DomainDataError, ExpectedStateError, TaskFileError, UnknownDomainError
    from castbench.store import StoreError

    return (
        AgentSpecError,
        DomainDataError,
        ExpectedStateError,
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
        except (typer.Exit, typer.Abort):  # `--help`, a clean exit: nothing to look up
            raise
        except Exception as exc:
            if isinstance(exc, user_errors()):
                fail(exc)
            raise
