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
    from castbench._agents.registry import builtin_agents  # noqa: F401
    from castbench._authoring.private import generate_private  # noqa: F401
    from castbench._authoring.template import new_domain  # noqa: F401
    from castbench._base.version import __version__  # noqa: F401
    from castbench._cli.errors import CastbenchGroup, fail  # noqa: F401
    from castbench._domain.pack_options import set_pack_option  # noqa: F401
    from castbench._records.metrics.critic import CriticRecord, critic_intervals, critic_metrics  # noqa: F401
    from castbench._records.store.export import ArchiveError, export_run, read_export, write_export  # noqa: F401
    from castbench._records.store.store import ResultsStore, StoreError  # noqa: F401
    from castbench._results.attribution.rules import attribute  # noqa: F401
    from castbench._results.compare.gate import Check, GateError  # noqa: F401
    from castbench._results.compare.plan import plan_checks  # noqa: F401
    from castbench._results.compare.sources import SourceError  # noqa: F401
    from castbench._results.decide import comparison, gate, verify  # noqa: F401
    from castbench._results.frames import steps_df, trials_df, verdicts_df  # noqa: F401
    from castbench._results.publish.archive import import_run  # noqa: F401
    from castbench._results.publish.board import load_board  # noqa: F401
    from castbench._results.report.critic_report import critic_report  # noqa: F401
    from castbench._results.report.runs import run_listing  # noqa: F401
    from castbench._results.report.summary import summarize_run  # noqa: F401
    from castbench._run.api import EvalResult, evaluate, profile, profile_runs  # noqa: F401
    from castbench._run.environment import Environment  # noqa: F401
    from castbench._run.options import EvalOptions  # noqa: F401
    from castbench._run.oracle_check import validate_domain  # noqa: F401
    from castbench_boards.build import build_board  # noqa: F401
    from castbench_boards.viewer.page import render_run_page  # noqa: F401

# the module each public name is defined in, grouped by that module
_HOMES: dict[str, tuple[str, ...]] = {
    # `__version__` is `castbench._base.version`'s, read on first use like the API: importing castbench
    # loads none of its modules (tests/core/test_package_entry.py)
    "castbench._base.version": ("__version__",),
    # running an evaluation, and a trainer's loop
    "castbench._run.options": ("EvalOptions",),
    "castbench._run.environment": ("Environment",),
    # reading stored runs: the store, its DataFrames (pandas loads with the first frame), critics' figures
    "castbench._records.store.store": ("ResultsStore", "StoreError"),
    "castbench._results.frames": ("steps_df", "trials_df", "verdicts_df"),
    "castbench._records.metrics.critic": ("CriticRecord", "critic_intervals", "critic_metrics"),
    "castbench._results.report.critic_report": ("critic_report",),
    # a command plugin's group and its one-line `error:` exit
    "castbench._cli.errors": ("CastbenchGroup", "fail"),
    # the Python function of each command (docs/commands.md): `profile`
    "castbench._run.api": ("EvalResult", "evaluate", "profile", "profile_runs"),
    # `compare`, `gate`, `gate-plan`, `verify`
    "castbench._results.decide": ("comparison", "gate", "verify"),
    "castbench._results.compare.gate": ("Check", "GateError"),
    "castbench._results.compare.sources": ("SourceError",),
    "castbench._results.compare.plan": ("plan_checks",),
    # `export`, `import`: a run as one portable file
    "castbench._records.store.export": ("ArchiveError", "export_run", "read_export", "write_export"),
    "castbench._results.publish.archive": ("import_run",),
    # `runs list`, `runs show`, `runs why`
    "castbench._results.report.runs": ("run_listing",),
    "castbench._results.report.summary": ("summarize_run",),
    "castbench._results.attribution.rules": ("attribute",),
    # `leaderboard build`, `view`: a board's file is the core's (`eval --suite` reads it too);
    # building one and a run's page are the boards satellite's (plugins/castbench_boards, the
    # `boards` extra), the one place the core names it
    "castbench._results.publish.board": ("load_board",),
    "castbench_boards.build": ("build_board",),
    "castbench_boards.viewer.page": ("render_run_page",),
    # `domains validate`, `domains new`, `tasks generate`, `--pack-option`
    "castbench._run.oracle_check": ("validate_domain",),
    "castbench._authoring.template": ("new_domain",),
    "castbench._authoring.private": ("generate_private",),
    "castbench._domain.pack_options": ("set_pack_option",),
    # `policies list`, `critics list`, `users list`
    "castbench._agents.registry": ("builtin_agents",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [name for names in _HOMES.values() for name in names]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'castbench' has no attribute {name!r}")
    # read at each look-up, never kept here: a test that patches the name where it is defined
    # (`monkeypatch.setattr(castbench._run.api, "evaluate", ...)`) is seen by every later reader
    return getattr(_module(home), name)


def _module(home: str) -> ModuleType:
    """The module `home` names, by a plain import statement: the import contract sees each edge
    (pyproject's `[tool.importlinter]`), and each module loads on first use only."""
    match home:
        case "castbench._base.version":
            import castbench._base.version  # noqa: F401
        case "castbench._run.options":
            import castbench._run.options  # noqa: F401
        case "castbench._run.environment":
            import castbench._run.environment  # noqa: F401
        case "castbench._records.store.store":
            import castbench._records.store.store  # noqa: F401
        case "castbench._results.frames":
            import castbench._results.frames  # noqa: F401
        case "castbench._records.metrics.critic":
            import castbench._records.metrics.critic  # noqa: F401
        case "castbench._results.report.critic_report":
            import castbench._results.report.critic_report  # noqa: F401
        case "castbench._cli.errors":
            import castbench._cli.errors  # noqa: F401
        case "castbench._run.api":
            import castbench._run.api  # noqa: F401
        case "castbench._results.decide":
            import castbench._results.decide  # noqa: F401
        case "castbench._results.compare.gate":
            import castbench._results.compare.gate  # noqa: F401
        case "castbench._results.compare.sources":
            import castbench._results.compare.sources  # noqa: F401
        case "castbench._results.compare.plan":
            import castbench._results.compare.plan  # noqa: F401
        case "castbench._records.store.export":
            import castbench._records.store.export  # noqa: F401
        case "castbench._results.publish.archive":
            import castbench._results.publish.archive  # noqa: F401
        case "castbench._results.report.runs":
            import castbench._results.report.runs  # noqa: F401
        case "castbench._results.report.summary":
            import castbench._results.report.summary  # noqa: F401
        case "castbench._results.attribution.rules":
            import castbench._results.attribution.rules  # noqa: F401
        case "castbench._results.publish.board":
            import castbench._results.publish.board  # noqa: F401
        case "castbench_boards.build":
            import castbench_boards.build  # noqa: F401
        case "castbench_boards.viewer.page":
            import castbench_boards.viewer.page  # noqa: F401
        case "castbench._run.oracle_check":
            import castbench._run.oracle_check  # noqa: F401
        case "castbench._authoring.template":
            import castbench._authoring.template  # noqa: F401
        case "castbench._authoring.private":
            import castbench._authoring.private  # noqa: F401
        case "castbench._domain.pack_options":
            import castbench._domain.pack_options  # noqa: F401
        case "castbench._agents.registry":
            import castbench._agents.registry  # noqa: F401
        case _:
            raise AssertionError(f"{home}: a home without its case here")
    return sys.modules[home]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
