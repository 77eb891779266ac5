"""castbench 0.1.0's module paths, until castbench 0.2.0.

castbench's internals moved into private packages named by noun (`castbench._run`, `._trial`,
`._agents`, ...; docs/architecture.md). Code written against an old path (`castbench.runner.engine`,
`castbench.agents.registry`, `castbench.publish.build`) still imports: `install` puts one finder in
front of Python's, which answers each old path with the module now at its new place (the same
object, so a name patched or compared through either path is one name), and warns once per path
with a `CastbenchDeprecationWarning` that names the new place and the removal release. The CLI shows
it on the console, and a worker forwards one raised while it imported an agent
(`castbench._base.deprecation`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

from castbench._legacy_table import OLD_PATHS

__all__ = ["install"]


class _Alias(Loader):
    """Loads an old path: a module as the module at its new place, a package as a namespace that
    gives the new package's names and its old children (which may have gone to other packages:
    `castbench.runner.replay` is `castbench._trial.replay`, `castbench.runner.engine`
    `castbench._run.engine`)."""

    def __init__(self, old: str, new: str, shown: str, package: bool) -> None:
        self.old, self.new, self.shown, self.package = old, new, shown, package
        self.spec: ModuleSpec | None = None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        from castbench._base.deprecation import moved

        # importing the new place by its name: the table is the old paths' (plugin-style loading)
        module = importlib.import_module(self.new)
        moved(self.old, _place(self.shown), stacklevel=_caller_level())
        if not self.package:
            self.spec = module.__spec__
            return module
        return _namespace(self.old, module)

    def exec_module(self, module: ModuleType) -> None:
        # the import system gave a moved module the old path's spec: it keeps its own
        if self.spec is not None:
            module.__spec__ = self.spec


def _namespace(old: str, new: ModuleType) -> ModuleType:
    namespace = ModuleType(old, new.__doc__)

    def __getattr__(name: str) -> object:
        child = f"{old}.{name}"
        if child in OLD_PATHS:
            return importlib.import_module(child)
        return getattr(new, name)

    namespace.__getattr__ = __getattr__  # type: ignore[method-assign]
    namespace.__path__ = []
    return namespace


class _OldPaths(MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        found = OLD_PATHS.get(fullname)
        if found is None:
            return None
        new, shown = found
        # a package (it has submodules the table names) keeps a search path, so that its
        # children's old paths reach this finder
        is_package = any(other.startswith(fullname + ".") for other in OLD_PATHS)
        return ModuleSpec(fullname, _Alias(fullname, new, shown, is_package), is_package=is_package)


def _place(shown: str) -> str:
    if shown.startswith("castbench._"):
        return f"{shown} (internal; the public API is castbench, castbench.agents and castbench.domain)"
    return shown


def _caller_level() -> int:
    """The `stacklevel` that points the warning at the line that imported the old path. `warnings`
    skips the import system's own frames when it counts; the frames of this module and of
    `importlib.import_module` count and are passed over here."""
    frame = sys._getframe(2)  # above `create_module`
    level = 2  # `moved`, then `create_module`
    while frame is not None:
        name = frame.f_code.co_filename
        if "importlib" in name and "_bootstrap" in name:
            pass  # not counted by `warnings`
        elif name == __file__ or name.endswith(("importlib/__init__.py", "importlib\\__init__.py")):
            level += 1
        else:
            return level + 1
        frame = frame.f_back  # type: ignore[assignment]
    return level


_FINDER = _OldPaths()


def install() -> None:
    """Put the old paths' finder first on `sys.meta_path` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
