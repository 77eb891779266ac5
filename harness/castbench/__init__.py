"""castbench: a reliability benchmark harness for tool-calling agents (pass^k, critics).

`castbench.evaluate(...)` runs (or resumes) an evaluation, as `castbench eval` does, from the same
options (`castbench.EvalOptions`, or its fields as keywords: `evaluate(domains="retail",
trials=4)`). Beside it: a trainer's step-wise `Environment`, the stored runs (`ResultsStore`) and
their DataFrames, a critic's figures, the Python function of each command, and what a command
plugin (`castbench.commands`) builds on.

The public API is this package, `castbench.agents` (for agent authors), `castbench.domain` (for
pack authors) and `castbench.formats` (run file formats); every other module is internal and
private (`castbench._run`, `castbench._trial`, ...: docs/architecture.md). Each name below is
written once, as the import statement that gives it, and loads on first use (`castbench._public`),
so that `import castbench` stays cheap for the parts that do not run evaluations (the CLI's help,
agent workers). The module paths of castbench 0.1.0 keep working until 0.2.0, with a warning
(`castbench._legacy`).
"""

# ruff: noqa: F401, I001  (each import is a public name, grouped by what it is for: no unused name, no reorder)

from __future__ import annotations

from typing import TYPE_CHECKING

from castbench import _legacy, _public

if TYPE_CHECKING:
    # `__version__` is `castbench._base.version`'s, read on first use like the API: importing castbench
    # loads none of its modules (tests/core/test_package_entry.py)
    from castbench._base.version import __version__

    # running an evaluation, and a trainer's loop
    from castbench._run.options import EvalOptions
    from castbench._run.environment import Environment

    # reading stored runs: the store, its DataFrames (pandas loads with the first frame), critics' figures
    from castbench._records.store.store import ResultsStore, StoreError
    from castbench_analyses.frames import steps_df, trials_df, verdicts_df
    from castbench._records.metrics.critic import CriticRecord, critic_intervals, critic_metrics
    from castbench._results.report.critic_report import critic_report

    # a command plugin's group and its one-line `error:` exit
    from castbench._cli.errors import CastbenchGroup, fail

    # the Python function of each command (docs/commands.md): `profile`
    from castbench._run.api import EvalResult, evaluate
    from castbench_analyses.profile_run import profile, profile_runs

    # `compare`, `gate`, `gate-plan`, `verify`
    from castbench._results.decide import comparison, gate, verify
    from castbench._results.compare.gate import Check, GateError
    from castbench._results.compare.sources import SourceError
    from castbench._results.compare.plan import plan_checks

    # `export`, `import`: a run as one portable file
    from castbench._records.store.export import ArchiveError, export_run, read_export, write_export
    from castbench._results.publish.archive import import_run

    # `runs list`, `runs show`, `runs why`
    from castbench._results.report.runs import run_listing
    from castbench._results.report.summary import summarize_run
    from castbench._results.attribution.rules import attribute

    # `leaderboard build`, `view`: a board's file is the core's (`eval --suite` reads it too);
    # building one and a run's page are the boards satellite's (plugins/castbench_boards, the
    # `boards` extra), the one place the core names it
    from castbench._results.publish.board import load_board
    from castbench_boards.build import build_board
    from castbench_boards.viewer.page import render_run_page

    # `domains validate`, `domains new`, `tasks generate` (the authoring satellite's,
    # plugins/castbench_authoring, which ships in castbench's wheel), `--pack-option`
    from castbench_authoring.oracle_check import validate_domain
    from castbench_authoring.template import new_domain
    from castbench_authoring.private import generate_private
    from castbench._domain.pack_options import set_pack_option

    # `policies list`, `critics list`, `users list`
    from castbench._agents.registry import builtin_agents

_legacy.install()
__all__, __getattr__, __dir__ = _public.names(globals())
