"""castbench's deprecations: a name or module that moved keeps working for one release and says,
on the console, where it went and in which release the old place goes away.

Python shows a `DeprecationWarning` only for code run as `__main__`, and never one raised in an
agent's worker process (whose output castbench keeps with the trial). So castbench's own warnings
are of a class of their own, `CastbenchDeprecationWarning` (a `DeprecationWarning`: a script's
filters and `pytest.warns(DeprecationWarning)` see it as one): the CLI shows it (`show_on_console`),
and a worker reports those raised while it imported the agent, for castbench's process to raise
again (`caught`, `forward`), once per process.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = [
    "REMOVAL",
    "CastbenchDeprecationWarning",
    "caught",
    "forward",
    "moved",
    "show_on_console",
]

REMOVAL = "0.2.0"
"""The release that removes what this one deprecates (castbench is 0.1.0: one release)."""


class CastbenchDeprecationWarning(DeprecationWarning):
    """Something of castbench's moved: the message names the new place and the removal release."""


def moved(old: str, new: str, *, removal: str = REMOVAL, stacklevel: int = 3) -> None:
    """Warn that `old` (a module or name) is deprecated: import `new` instead. `stacklevel` 3
    points at the code that imported a deprecated module (the module's own `moved(...)` call
    being 1, importlib's frames skipped) or called a deprecated function."""
    warnings.warn(
        f"{old} is deprecated and will be removed in castbench {removal}: import from {new} instead",
        CastbenchDeprecationWarning,
        stacklevel=stacklevel,
    )


def show_on_console() -> None:
    """Show castbench's deprecations (once per place that raises one) in this process: the CLI's.
    A `-W` option or `PYTHONWARNINGS` the user gave decides instead."""
    if not sys.warnoptions:
        warnings.filterwarnings("default", category=CastbenchDeprecationWarning)


@contextmanager
def caught() -> Iterator[list[dict[str, Any]]]:
    """Record castbench's deprecations raised in the block (each as message, file and line, to
    send over a pipe); any other warning is shown as it would have been."""
    found: list[dict[str, Any]] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", CastbenchDeprecationWarning)
        yield found
    for each in seen:
        if issubclass(each.category, CastbenchDeprecationWarning):
            found.append({"message": str(each.message), "filename": each.filename, "lineno": each.lineno})
        else:
            warnings.showwarning(
                each.message, each.category, each.filename, each.lineno, each.file, each.line
            )


_FORWARDED: dict[Any, Any] = {}
"""The warning registry of forwarded deprecations: under the "default" action each is shown once
in this process, however many runs resolve the agent."""


def forward(found: Sequence[dict[str, Any]]) -> None:
    """Raise again, in this process, the deprecations another one reported (`caught`), at the
    place in the agent's code that raised them."""
    for each in found:
        warnings.warn_explicit(
            str(each["message"]),
            CastbenchDeprecationWarning,
            str(each["filename"]),
            int(each["lineno"]),
            registry=_FORWARDED,
        )
