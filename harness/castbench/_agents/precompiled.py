"""The agent's own modules compiled once per worker, not once per trial.

Each trial's process imports the agent afresh (independent trials), inside a sandbox where the
agent's folder is read-only, so Python cannot write the bytecode it compiles there: without this,
every trial compiled every module of the agent again (half a millisecond for a 20-line module,
tens of milliseconds for a large agent). The worker's template, castbench's code that never runs
the agent's, reads and compiles the modules `castbench._agents.code` finds (compiling runs
nothing); each trial's process imports them from that code, after checking each file is still the
one compiled (size and modification time, as Python checks its own bytecode cache) and that the
trial's process may read it: opened there, under its sandbox, so code compiled ahead never
reaches a trial that could not read its source (a domain package beside the agent's in
`site-packages` is left out here too). Any other module, or a file changed since, is imported as
usual.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
from collections.abc import Iterable
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

from castbench._agents.code import agent_code

__all__ = ["MOST_MODULES", "Precompiled"]

MOST_MODULES = 2_000
"""The most modules a worker compiles ahead (its start stays bounded for a huge package); the
rest are compiled by each trial's import."""


class Precompiled(importlib.abc.MetaPathFinder):
    """A meta path finder serving the agent's modules from code compiled in the template."""

    def __init__(self, modules: dict[str, Path], refused: Iterable[str] = ()) -> None:
        self.table: dict[str, tuple[str, bool, tuple[int, int], Any]] = {}
        refused = frozenset(refused)
        kept = [(name, path) for name, path in modules.items() if name.partition(".")[0] not in refused]
        for name, path in kept[:MOST_MODULES]:
            try:
                status = os.stat(path)
                code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
            except (OSError, SyntaxError, ValueError):
                continue  # the trial's own import says what is wrong, where
            stamp = (status.st_mtime_ns, status.st_size)
            self.table[name] = (str(path), path.name == "__init__.py", stamp, code)

    @classmethod
    def for_agent(cls, target: str, role: str, refused: Iterable[str]) -> Precompiled:
        """The modules of the agent `target` (`module:attribute`) as the current `sys.path` finds
        them, bar those of the `refused` top-level packages (the domains and their data)."""
        return cls(agent_code(target.partition(":")[0], role).modules, refused)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        entry = self.table.get(fullname)
        if entry is None:
            return None
        origin, package, stamp, code = entry
        try:  # opened, not only looked at: the sandbox checks opens, not `stat`
            handle = os.open(origin, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None  # not this process's to read: imported (and refused) as usual
        try:
            status = os.fstat(handle)
        finally:
            os.close(handle)
        if (status.st_mtime_ns, status.st_size) != stamp:
            return None  # changed since the worker started: compiled by the import, as usual
        return importlib.util.spec_from_file_location(
            fullname,
            origin,
            loader=_Loader(fullname, origin, code),
            submodule_search_locations=[os.path.dirname(origin)] if package else None,
        )


class _Loader(importlib.machinery.SourceFileLoader):
    """A source file's loader (its data and resources as usual) whose code was compiled ahead."""

    def __init__(self, fullname: str, path: str, code: Any) -> None:
        super().__init__(fullname, path)
        self.code = code

    def get_code(self, fullname: str) -> Any:
        return self.code if fullname == self.name else super().get_code(fullname)
