"""What an import-path agent loads, found without running any of its code.

Two consumers need the same answer: the run's identity (`castbench._records.identity`: a changed
prompt file or helper module must start a new run, not resume a stale one) and the sandbox
(`castbench._agents.sandbox`: the agent's worker may read what it loads, and nothing else).

What counts: the agent's top-level package, every file of it (a prompt in `greeting.txt`
decides results as much as code), or its lone module; and, transitively, the top-level modules
its code imports that sit beside it (in the same `sys.path` folder: a team's `helpers.py` next
to its package). Imports are read from the source (`ast`), so imports inside functions count
too; what the source cannot show (modules imported by a name computed at run time, files a lone
module reads beside it) is listed in `blind_spots`, which eval prints.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from castbench._agents.open_files import SQLITE_HEADER, open_files
from castbench._agents.paths import find_top

__all__ = ["AgentCode", "agent_code"]

_DYNAMIC_IMPORTS = ("import_module(", "__import__(")
_READS_FILES = ("open(", "read_text(", "read_bytes(", "importlib.resources", "get_data(", "__file__")


@dataclass
class AgentCode:
    """What an import-path agent loads, found without running it: its top-level package (every
    file, data files too: a prompt in `greeting.txt` decides results as much as code), or its lone
    module, and the sibling top-level modules of its own code that these import, transitively."""

    units: list[Path] = field(default_factory=list)
    """Package folders and lone module files, in the order found."""
    blind_spots: list[str] = field(default_factory=list)
    syntax_errors: list[str] = field(default_factory=list)
    """`file:line: message` for each of its modules Python cannot parse: it cannot be imported,
    and saying where beats a worker's traceback."""
    modules: dict[str, Path] = field(default_factory=dict)
    """The agent's own modules its imports reach (dotted name -> file), as parsed here: what a
    worker compiles once for all its trials (`castbench._agents.precompiled`)."""

    def parts(self) -> Iterator[bytes]:
        """Each file's relative path and content, results left out (`_is_results`)."""
        live = frozenset(file.identity for file in open_files() if file.sqlite)
        for unit in self.units:
            yield unit.name.encode()
            files = sorted(unit.rglob("*")) if unit.is_dir() else [unit]
            for path in files:
                if not path.is_file() or "__pycache__" in path.parts or _is_results(path, live):
                    continue
                content = path.read_bytes()
                if not content.startswith(SQLITE_HEADER):
                    yield path.relative_to(unit.parent).as_posix().encode()
                    yield content


_SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def _is_results(path: Path, live: frozenset[tuple[int, int]]) -> bool:
    """A results store kept in the agent's folder is no part of the agent: it grows with every
    run, and counting it would make each run a new one that never resumes. Told by name (SQLite's
    sidecars, castbench's run locks `.<db>.<hash>.lock`) or as a store this process has open,
    without opening it (`castbench._agents.open_files`); any other SQLite database by its header."""
    name = path.name
    if name.endswith(_SQLITE_SIDECARS) or (name.startswith(".") and name.endswith(".lock")):
        return True
    status = path.stat()
    return (status.st_dev, status.st_ino) in live


def _unit(name: str, *, namespace: bool = False) -> tuple[Path, Path] | None:
    """The folder or file of top-level module `name` and the `sys.path` entry it is found in, or
    None (not found, built in, not a plain file on disk, or a namespace package unless allowed:
    any folder on `sys.path` is one, and a sibling folder of data is no module of the agent's).
    Finding a top-level spec runs none of its code."""
    spec = find_top(name)
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations and (namespace or (spec.origin or "").endswith("__init__.py")):
        folder = Path(locations[0])
        return folder, folder.parent
    if spec.origin and spec.has_location and spec.origin.endswith(".py"):
        file = Path(spec.origin)
        return file, file.parent
    return None


def _imported_modules(tree: ast.Module, package: str) -> set[str]:
    """Dotted names the imports in `tree` may load (`from a import b`: `a.b` and `a`), relative
    ones resolved against `package` (the importing module's package)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            if base:
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def _module_file(home: Path, dotted: str) -> Path | None:
    """The file of module `dotted` in the `sys.path` folder `home` (a package's `__init__.py`)."""
    base = home.joinpath(*dotted.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def agent_code(module_name: str, role: str) -> AgentCode:
    """What the agent in `module_name` (`pkg.module` of `pkg.module:Class`) loads; `role` names it
    in the blind spots. Imports are followed module by module from the agent's own, so a large
    package is read only where the agent's code reaches."""
    top = module_name.partition(".")[0]
    found = _unit(top, namespace=True)
    if found is None:  # not installed (resolving it says so), or not plain files (a zip archive)
        return AgentCode(blind_spots=[f"the {role} ({module_name}) is not loaded from plain files"])
    home = found[1]
    code = AgentCode()
    units: dict[str, bool] = {}  # top-level name -> whether it is code of the agent's (beside it)
    pending, seen = [module_name], {module_name}
    while pending:
        name = pending.pop(0)
        first = name.partition(".")[0]
        if first not in units:
            unit = None if first in sys.stdlib_module_names else _unit(first, namespace=first == top)
            units[first] = unit is not None and unit[1] == home
            if units[first] and unit is not None:
                code.units.append(unit[0])
        path = _module_file(home, name) if units[first] else None
        if path is None:
            continue
        text = path.read_text(errors="replace")
        if any(marker in text for marker in _DYNAMIC_IMPORTS):
            code.blind_spots.append(f"{path.name} imports modules by name at run time")
        if path.parent == home and any(marker in text for marker in _READS_FILES):
            code.blind_spots.append(f"{path.name} is a lone module that may read files beside it")
        try:
            tree = ast.parse(text, filename=str(path))
        except SyntaxError as exc:
            code.syntax_errors.append(f"{path}:{exc.lineno}: {exc.msg}")
            continue
        code.modules[name] = path
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for imported in sorted(_imported_modules(tree, package) - seen):
            seen.add(imported)
            pending.append(imported)
        if "." in name and name.rpartition(".")[0] not in seen:  # its packages' __init__ run first
            seen.add(name.rpartition(".")[0])
            pending.append(name.rpartition(".")[0])
    return code
