"""Where import-path agents are found: folders given to castbench, searched only by the sandboxed
workers (issue 56).

castbench's own process never puts an agent's folder on its import path (a folder on
`sys.path` is a place any later import of castbench's could pick a module from) and never
imports an agent: it only looks up where the agent's top-level package lies, with
`importlib.machinery.PathFinder` (which runs none of its code), to work out what the worker may
read. The folders are `CASTBENCH_AGENT_PATH` (several joined by the OS path separator, the way
`PYTHONPATH` is written: `castbench eval --agent-path DIR` sets it), else the working directory
(where `castbench eval --policy team.agent:Policy` has always found a team's package). The worker
imports with them first, then castbench's own path (the environment's installed packages).
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec, PathFinder

__all__ = ["AGENT_PATH_ENV", "agent_path", "find_top", "search_path"]

AGENT_PATH_ENV = "CASTBENCH_AGENT_PATH"


def agent_path() -> tuple[str, ...]:
    """The folders agents are imported from (absolute, real paths)."""
    given = [entry for entry in os.environ.get(AGENT_PATH_ENV, "").split(os.pathsep) if entry.strip()]
    if not given:
        given = [os.getcwd()]
    return tuple(dict.fromkeys(os.path.realpath(os.path.abspath(entry)) for entry in given))


def search_path() -> list[str]:
    """What an agent's worker imports from: the agent folders, then castbench's own path."""
    own = [os.path.abspath(entry) for entry in sys.path if entry]
    return list(dict.fromkeys([*agent_path(), *own]))


def find_top(name: str) -> ModuleSpec | None:
    """Where the top-level module `name` lies on the workers' path, found without running any
    of its code (None: not there, or built into the interpreter)."""
    if "." in name or name in sys.builtin_module_names:
        return None
    try:
        return PathFinder.find_spec(name, search_path())
    except (ImportError, ValueError):
        return None
