"""castbench: a reliability benchmark harness for tool-calling agents (pass^k, critics).

`castbench.evaluate(...)` runs (or resumes) an evaluation, as `castbench eval` does, from the same
options (`castbench.EvalOptions`, or its fields as keywords: `evaluate(domains="retail",
trials=4)`). Beside it: a trainer's step-wise `Environment`, the stored runs (`ResultsStore`) and
their DataFrames, a critic's figures, and what a command plugin (`castbench.commands`) builds on.

The public API is this package, `castbench.agents` (for agent authors) and `castbench.domain` (for
pack authors); every other module is internal and may change without notice (docs/api.md). Each
name here is read from the module that defines it on first use, so that `import castbench` stays
cheap for the parts that do not run evaluations (the CLI's help, agent workers)."""

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the public names' types (each is read on first use, below)
    from castbench.agents.registry import builtin_agents  # noqa: F401
    from castbench.api import EvalResult, evaluate, profile, profile_runs  # noqa: F401
    from castbench.attribution.rules import attribute  # noqa: F401
    from castbench.cli.errors import CastbenchGroup, fail  # noqa: F401
    from castbench.compare.gate import Check, GateError  # noqa: F401
    from castbench.compare.plan import plan_checks  # noqa: F401
    from castbench.compare.sources import SourceError  # noqa: F401
    from castbench.decide import comparison, gate, verify  # noqa: F401
    from castbench.domain.pack_options import set_pack_option  # noqa: F401
    from castbench.environment import Environment  # noqa: F401
    from castbench.frames import steps_df, trials_df, verdicts_df  # noqa: F401
    from castbench.metrics.critic import CriticRecord, critic_intervals, critic_metrics  # noqa: F401
    from castbench.options import EvalOptions  # noqa: F401
    from castbench.publish.archive import import_run  # noqa: F401
    from castbench.publish.board import load_board  # noqa: F401
    from castbench.report.critic_report import critic_report  # noqa: F401
    from castbench.report.runs import run_listing  # noqa: F401
    from castbench.report.summary import summarize_run  # noqa: F401
    from castbench.runner.oracle_check import validate_domain  # noqa: F401
    from castbench.store.export import ArchiveError, export_run, read_export, write_export  # noqa: F401
    from castbench.store.store import ResultsStore, StoreError  # noqa: F401
    from castbench.version import __version__  # noqa: F401
    from castbench_authoring.private import generate_private  # noqa: F401
    from castbench_authoring.template import new_domain  # noqa: F401
    from castbench_boards.build import build_board  # noqa: F401
    from castbench_boards.viewer.page import render_run_page  # noqa: F401

# the module each public name is defined in, grouped by that module
_HOMES: dict[str, tuple[str, ...]] = {
    # `__version__` is `castbench.version`'s, read on first use like the API: importing castbench
    # loads none of its modules (tests/core/test_package_entry.py)
    "castbench.version": ("__version__",),
    # running an evaluation, and a trainer's loop
    "castbench.options": ("EvalOptions",),
    "castbench.environment": ("Environment",),
    # reading stored runs: the store, its DataFrames (pandas loads with the first frame), critics' figures
    "castbench.store.store": ("ResultsStore", "StoreError"),
    "castbench.frames": ("steps_df", "trials_df", "verdicts_df"),
    "castbench.metrics.critic": ("CriticRecord", "critic_intervals", "critic_metrics"),
    "castbench.report.critic_report": ("critic_report",),
    # a command plugin's group and its one-line `error:` exit
    "castbench.cli.errors": ("CastbenchGroup", "fail"),
    # the Python function of each command (docs/commands.md): `profile`
    "castbench.api": ("EvalResult", "evaluate", "profile", "profile_runs"),
    # `compare`, `gate`, `gate-plan`, `verify`
    "castbench.decide": ("comparison", "gate", "verify"),
    "castbench.compare.gate": ("Check", "GateError"),
    "castbench.compare.sources": ("SourceError",),
    "castbench.compare.plan": ("plan_checks",),
    # `export`, `import`: a run as one portable file
    "castbench.store.export": ("ArchiveError", "export_run", "read_export", "write_export"),
    "castbench.publish.archive": ("import_run",),
    # `runs list`, `runs show`, `runs why`
    "castbench.report.runs": ("run_listing",),
    "castbench.report.summary": ("summarize_run",),
    "castbench.attribution.rules": ("attribute",),
    # `leaderboard build`, `view`: a board's file is the core's (`eval --suite` reads it too);
    # building one and a run's page are the boards satellite's (plugins/castbench_boards, the
    # `boards` extra), the one place the core names it
    "castbench.publish.board": ("load_board",),
    "castbench_boards.build": ("build_board",),
    "castbench_boards.viewer.page": ("render_run_page",),
    # `domains validate`, `domains new`, `tasks generate`, `--pack-option` (the two between are
    # the authoring satellite's, plugins/castbench_authoring, which ships in castbench's wheel)
    "castbench.runner.oracle_check": ("validate_domain",),
    "castbench_authoring.template": ("new_domain",),
    "castbench_authoring.private": ("generate_private",),
    "castbench.domain.pack_options": ("set_pack_option",),
    # `policies list`, `critics list`, `users list`
    "castbench.agents.registry": ("builtin_agents",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [name for names in _HOMES.values() for name in names]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'castbench' has no attribute {name!r}")
    # read at each look-up, never kept here: a test that patches the name where it is defined
    # (`monkeypatch.setattr(castbench.api, "evaluate", ...)`) is seen by every later reader
    return getattr(_module(home), name)


def _module(home: str) -> ModuleType:
    """The module `home` names, by a plain import statement: the import contract sees each edge
    (pyproject's `[tool.importlinter]`), and each module loads on first use only."""
    match home:
        case "castbench.version":
            import castbench.version  # noqa: F401
        case "castbench.options":
            import castbench.options  # noqa: F401
        case "castbench.environment":
            import castbench.environment  # noqa: F401
        case "castbench.store.store":
            import castbench.store.store  # noqa: F401
        case "castbench.frames":
            import castbench.frames  # noqa: F401
        case "castbench.metrics.critic":
            import castbench.metrics.critic  # noqa: F401
        case "castbench.report.critic_report":
            import castbench.report.critic_report  # noqa: F401
        case "castbench.cli.errors":
            import castbench.cli.errors  # noqa: F401
        case "castbench.api":
            import castbench.api  # noqa: F401
        case "castbench.decide":
            import castbench.decide  # noqa: F401
        case "castbench.compare.gate":
            import castbench.compare.gate  # noqa: F401
        case "castbench.compare.sources":
            import castbench.compare.sources  # noqa: F401
        case "castbench.compare.plan":
            import castbench.compare.plan  # noqa: F401
        case "castbench.store.export":
            import castbench.store.export  # noqa: F401
        case "castbench.publish.archive":
            import castbench.publish.archive  # noqa: F401
        case "castbench.report.runs":
            import castbench.report.runs  # noqa: F401
        case "castbench.report.summary":
            import castbench.report.summary  # noqa: F401
        case "castbench.attribution.rules":
            import castbench.attribution.rules  # noqa: F401
        case "castbench.publish.board":
            import castbench.publish.board  # noqa: F401
        case "castbench_boards.build":
            import castbench_boards.build  # noqa: F401
        case "castbench_boards.viewer.page":
            import castbench_boards.viewer.page  # noqa: F401
        case "castbench.runner.oracle_check":
            import castbench.runner.oracle_check  # noqa: F401
        case "castbench_authoring.template":
            import castbench_authoring.template  # noqa: F401
        case "castbench_authoring.private":
            import castbench_authoring.private  # noqa: F401
        case "castbench.domain.pack_options":
            import castbench.domain.pack_options  # noqa: F401
        case "castbench.agents.registry":
            import castbench.agents.registry  # noqa: F401
        case _:
            raise AssertionError(f"{home}: a home without its case here")
    return sys.modules[home]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
