"""How the public modules (`castbench`, `castbench.agents`, `castbench.domain`) give their names.

Each public name is written once, as a plain import statement in its public module: at the top
for the few that cost nothing to load, and under `if TYPE_CHECKING:` for the rest, which load on
first use. Type checkers and the import contract (pyproject's `[tool.importlinter]`) read those
statements as they read any other; at run time `names` reads them from the module's source and
`__getattr__` runs the one that gives the name asked for, the first time it is asked for. So
`import castbench.agents` in an agent's worker loads none of castbench's internals, and no table
repeats a name a second time.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["names"]


def names(
    namespace: dict[str, Any], *, moved: Mapping[str, str] = {}
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """`__all__`, `__getattr__` and `__dir__` for the public module whose globals are `namespace`.

    `moved` names those that moved to another module (deprecated, until `REMOVAL`): each still
    resolves, with a `CastbenchDeprecationWarning` naming its new place."""
    module_name = namespace["__name__"]
    tree = ast.parse(Path(namespace["__file__"]).read_text(encoding="utf-8"))
    eager: list[str] = []
    homes: dict[str, tuple[str, str]] = {}  # public name -> (module, its name there)
    for node in tree.body:
        if _is_public_import(node):
            eager.extend(alias.asname or alias.name for alias in node.names)  # type: ignore[attr-defined]
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for inner in node.body:
                if _is_public_import(inner):
                    for alias in inner.names:  # type: ignore[attr-defined]
                        homes[alias.asname or alias.name] = (inner.module, alias.name)  # type: ignore[attr-defined]
    public = [*eager, *homes]

    def __getattr__(name: str) -> Any:
        if name in moved:
            from castbench._base.deprecation import moved as warn_moved

            warn_moved(f"{module_name}.{name}", moved[name], stacklevel=3)
            return getattr(_load(moved[name], name), name)
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        # read at each look-up, never kept here: a test that patches the name where it is defined
        # (`monkeypatch.setattr(castbench._run.api, "evaluate", ...)`) is seen by every later reader
        return getattr(_load(*home), home[1])

    def __dir__() -> list[str]:
        return sorted({*namespace, *public})

    return public, __getattr__, __dir__


def _load(module: str, name: str) -> Any:
    """What `from module import name` runs (its module, loaded if it is not yet)."""
    loaded = sys.modules.get(module)
    return loaded if loaded is not None else __import__(module, fromlist=[name])


def _is_public_import(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.ImportFrom)
        and node.level == 0
        and node.module is not None
        and node.module.split(".")[0].startswith("castbench")
        and node.module != "castbench"  # the public modules' own helpers (`from castbench import _public`)
    )


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
