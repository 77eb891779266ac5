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
import importlib.util
import sys
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["install"]


_TRIAL = ("episode", "rollout", "replay", "deadline", "spec", "execution", "seeds")
_BASE = (
    "conversation",
    "dialogue",
    "lossless",
    "errors",
    "defaults",
    "wakeup",
    "places",
    "version",
    "deprecation",
)

_MOVES: tuple[tuple[str, str], ...] = (
    # what went to a satellite, and the agent types' old module (public in castbench.agents)
    ("castbench.agents.conversation", "castbench._base.conversation"),
    ("castbench.cli.leaderboard_cmd", "castbench_boards.leaderboard_cmd"),
    ("castbench.cli.view_cmd", "castbench_boards.view_cmd"),
    ("castbench.cli.mcp_cmd", "castbench_bridges.mcp_cmd"),
    ("castbench.runner.oracle_check", "castbench_authoring.oracle_check"),
    ("castbench.runner.parity", "castbench_authoring.parity"),
    ("castbench.attribution.why", "castbench_analyses.why"),
    ("castbench.attribution.judge", "castbench_analyses.why_judge"),
    ("castbench.cli.counterfactual_cmd", "castbench_analyses.counterfactual_cmd"),
    ("castbench.cli.profile_cmd", "castbench_analyses.profile_cmd"),
    ("castbench.runner.counterfactual", "castbench_analyses.counterfactual"),
    ("castbench.report.counterfactual", "castbench_analyses.counterfactual_report"),
    ("castbench.report.profile", "castbench_analyses.profile_report"),
    ("castbench.metrics.counterfactual", "castbench_analyses.counterfactual_metrics"),
    ("castbench.metrics.profile", "castbench_analyses.profile_metrics"),
    ("castbench.records.branches", "castbench_analyses.branches"),
    *(
        (f"castbench.publish.{name}", f"castbench_boards.{name}")
        for name in ("build", "curve", "profile", "render", "rerun", "rows")
    ),
    ("castbench.publish.inspect_log", "castbench_bridges.inspect_log"),
    ("castbench.runner.executors.ray", "castbench_ray.executor"),
    ("castbench.service", "castbench_bridges"),
    ("castbench.viewer", "castbench_boards.viewer"),
    # the internals, by noun
    ("castbench.cli", "castbench._cli"),
    ("castbench.api", "castbench._run.api"),
    ("castbench.environment", "castbench._run.environment"),
    ("castbench.options", "castbench._run.options"),
    ("castbench.report.floors", "castbench._run.floors"),
    ("castbench.runner.journal", "castbench._records.journal"),
    *((f"castbench.runner.{name}", f"castbench._trial.{name}") for name in _TRIAL),
    ("castbench.runner", "castbench._run"),
    ("castbench.decide", "castbench._results.decide"),
    ("castbench.frames", "castbench_analyses.frames"),
    ("castbench.compare", "castbench._results.compare"),
    ("castbench.publish", "castbench._results.publish"),
    ("castbench.report", "castbench._results.report"),
    ("castbench.attribution", "castbench._results.attribution"),
    ("castbench.records", "castbench._records"),
    ("castbench.store", "castbench._records.store"),
    ("castbench.metrics", "castbench._records.metrics"),
    ("castbench.authoring", "castbench_authoring"),
    ("castbench.models", "castbench._agents.models"),
    ("castbench.agents.", "castbench._agents."),  # the package itself is public
    ("castbench.grading", "castbench._grading"),
    ("castbench.domain.", "castbench._domain."),  # the package itself is public
    *((f"castbench.{name}", f"castbench._base.{name}") for name in _BASE),
)
"""castbench 0.1.0's module paths: (old prefix, new prefix), the first that matches a path wins. A
prefix that ends in a dot matches the modules below a package, never the package."""


_SHOWN = {"castbench._base.conversation": "castbench.agents"}
"""A moved module whose names are public: the deprecation names the public module."""


def new_place(old: str) -> str | None:
    """Where the module castbench 0.1.0 had at `old` is now (None: `old` is no old path)."""
    for before, after in _MOVES:
        if before.endswith("."):
            if old.startswith(before):
                return after + old[len(before) :]
        elif old == before or old.startswith(before + "."):
            return after + old[len(before) :]
    return None


class _Alias(Loader):
    """Loads an old path: a module as the module at its new place, a package as a namespace that
    gives the new package's names and its old children (which may have gone to other packages:
    `castbench.runner.replay` is `castbench._trial.replay`, `castbench.runner.engine`
    `castbench._run.engine`)."""

    def __init__(self, old: str, new: str, package: bool) -> None:
        self.old, self.new, self.package = old, new, package
        self.spec: ModuleSpec | None = None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        from castbench._base.deprecation import moved

        # importing the new place by its name: the table is the old paths' (plugin-style loading)
        module = importlib.import_module(self.new)
        moved(self.old, _place(_SHOWN.get(self.new, self.new)), stacklevel=_caller_level())
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
        moved_to = new_place(child)
        if moved_to is not None and _exists(moved_to):
            return importlib.import_module(child)
        value = getattr(new, name)
        if not name.startswith("__"):
            from castbench._base.deprecation import moved

            moved(child, _place(new.__name__), stacklevel=3)
        return value

    namespace.__getattr__ = __getattr__  # type: ignore[method-assign]
    namespace.__path__ = []
    return namespace


class _OldPaths(MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not fullname.startswith("castbench.") or "._" in fullname:
            return None
        new = new_place(fullname)
        if new is None:
            return None
        found = _exists(new)
        if found is None:
            return None
        # a package keeps a search path, so that its children's old paths reach this finder
        package = found.submodule_search_locations is not None
        return ModuleSpec(fullname, _Alias(fullname, new, package), is_package=package)


def _exists(name: str) -> ModuleSpec | None:
    try:
        return importlib.util.find_spec(name)
    except ImportError:  # its package is not there either
        return None


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
