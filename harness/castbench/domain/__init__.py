"""castbench's public API for pack authors: what a domain pack needs to define its data, tools,
tasks and rules, to generate and validate its tasks, to grade a trial, and to import and export
runs in its own format.

A pack imports from here only (with `castbench.agents` for an agent it ships): every other module
of castbench, the submodules of this package among them, is internal and may change without notice
(docs/api.md).

The names that define a domain (its database, tools, tasks, rules) are imported with the package,
as before. The rest are read from the module that defines it on first use: those modules sit above
`domain` in the layers of pyproject's `[tool.importlinter]`, and import the package themselves, so
an import statement here would be a cycle (tests/core/test_import_cycles.py) where a facade's
re-export is none. Their types are in the stub beside this file (`__init__.pyi`);
tests/core/test_public_api.py holds the two to the same names and every name to its module.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from castbench._base.deprecation import moved
from castbench._domain.database import Database, Record, RecordNotFound
from castbench._domain.domain import Domain, DomainDataError, ExpectedStateError, TaskChecks
from castbench._domain.keeping import kept
from castbench._domain.pack_options import PackOption, PackOptionError, PackOptions
from castbench._domain.registry import (
    UnknownDomainError,
    available_domains,
    load_domain,
    register_domain,
    resolve_domains,
)
from castbench._domain.rules import DomainRules, ObservedCall, RuleFinding
from castbench._domain.task import (
    DeviceStep,
    EarnedSpec,
    Fact,
    GradingSpec,
    Lookup,
    Mention,
    Task,
    TaskFileError,
    ToolCall,
    UserScenario,
)
from castbench._domain.tools import Observation, Tool, ToolCrash, ToolError, Toolkit, read_tool, write_tool

# the names read on first use, grouped by the module that defines each
_HOMES: dict[str, tuple[str, ...]] = {
    # a domain's state, tools and facts beyond the core above
    "castbench._domain.database": ("Row", "SEQUENCES_TABLE", "Snapshot"),
    "castbench._domain.task": ("Rival",),
    "castbench._domain.common_tools": ("calculate", "transfer_to_human_agents"),
    "castbench._domain.facts": ("Facts", "ObservedFacts", "TrueFacts"),
    # a published task set's domain: its identity look-ups, its tools' schemas, its derived rules
    "castbench._domain.identity": ("IDENTITY_PREFIX", "identity_call", "identity_facts"),
    "castbench._domain.published": ("first_person", "schema_arguments_model"),
    "castbench._domain.derived_rules": ("DerivedRules",),
    # generating and validating tasks
    "castbench._authoring.generation": (
        "DraftBase",
        "Families",
        "Generator",
        "Split",
        "UniqueDigits",
        "confirm_answer",
        "customer_pools",
        "mention",
        "spoken_list",
        "task_from_draft",
    ),
    "castbench._authoring.claims": ("published_earned_spec",),
    "castbench._authoring.validate": ("validate_task",),
    # grading a trial, and replaying a published trajectory
    "castbench._grading.state_diff": ("state_diff",),
    "castbench._run.parity": ("Trajectory",),
    # running a trial, and the records of runs and trials it writes (what an importer builds)
    "castbench._trial.rollout": ("run_trial",),
    "castbench._trial.spec": ("TrialRuntime", "TrialSpec"),
    "castbench._trial.deadline": ("TimeLimits",),
    "castbench._trial.seeds": ("trial_seed",),
    "castbench._trial.execution": ("AgentSet",),
    "castbench._records.config": ("Limits", "RunConfig", "Verification"),
    "castbench._records.trial": ("EndReason", "Proposal", "StepRecord", "TrialRecord"),
    "castbench._grading.labeler": ("ActionLabel",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

_MOVED = {
    "ArchiveError": "castbench.formats",
    "ExportedRun": "castbench.formats",
    "RunFormat": "castbench.formats",
}
"""Names that moved to another public module: each still resolves here, with a
`DeprecationWarning` naming its new place, until the removal release (`castbench._base.deprecation`)."""

__all__ = [
    "PackOption",
    "PackOptionError",
    "PackOptions",
    "UnknownDomainError",
    "Database",
    "DeviceStep",
    "Domain",
    "DomainDataError",
    "DomainRules",
    "EarnedSpec",
    "ObservedCall",
    "RuleFinding",
    "ExpectedStateError",
    "Fact",
    "GradingSpec",
    "Lookup",
    "Mention",
    "Observation",
    "Record",
    "RecordNotFound",
    "Task",
    "TaskChecks",
    "TaskFileError",
    "Tool",
    "ToolCall",
    "ToolCrash",
    "ToolError",
    "Toolkit",
    "UserScenario",
    "available_domains",
    "load_domain",
    "read_tool",
    "register_domain",
    "resolve_domains",
    "write_tool",
    "kept",
    *_HOME,
]


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        moved(f"castbench.domain.{name}", _MOVED[name], stacklevel=3)
        return getattr(_module(_MOVED[name]), name)
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # read at each look-up, never kept here: a test that patches the name where it is defined
    # (`monkeypatch.setattr(castbench._run.api, "evaluate", ...)`) is seen by every later reader
    return getattr(_module(home), name)


def _module(home: str) -> ModuleType:
    """The module `home` names, by a plain import statement: the import contract sees each edge
    (pyproject's `[tool.importlinter]`), and each module loads on first use only."""
    match home:
        case "castbench._domain.database":
            import castbench._domain.database  # noqa: F401
        case "castbench._domain.task":
            import castbench._domain.task  # noqa: F401
        case "castbench._domain.common_tools":
            import castbench._domain.common_tools  # noqa: F401
        case "castbench._domain.facts":
            import castbench._domain.facts  # noqa: F401
        case "castbench._domain.identity":
            import castbench._domain.identity  # noqa: F401
        case "castbench._domain.published":
            import castbench._domain.published  # noqa: F401
        case "castbench._domain.derived_rules":
            import castbench._domain.derived_rules  # noqa: F401
        case "castbench._authoring.generation":
            import castbench._authoring.generation  # noqa: F401
        case "castbench._authoring.claims":
            import castbench._authoring.claims  # noqa: F401
        case "castbench._authoring.validate":
            import castbench._authoring.validate  # noqa: F401
        case "castbench._grading.state_diff":
            import castbench._grading.state_diff  # noqa: F401
        case "castbench._run.parity":
            import castbench._run.parity  # noqa: F401
        case "castbench._trial.rollout":
            import castbench._trial.rollout  # noqa: F401
        case "castbench._trial.spec":
            import castbench._trial.spec  # noqa: F401
        case "castbench._trial.deadline":
            import castbench._trial.deadline  # noqa: F401
        case "castbench._trial.seeds":
            import castbench._trial.seeds  # noqa: F401
        case "castbench._trial.execution":
            import castbench._trial.execution  # noqa: F401
        case "castbench._records.config":
            import castbench._records.config  # noqa: F401
        case "castbench._records.trial":
            import castbench._records.trial  # noqa: F401
        case "castbench._grading.labeler":
            import castbench._grading.labeler  # noqa: F401
        case "castbench.formats":
            import castbench.formats  # noqa: F401
        case _:
            raise AssertionError(f"{home}: a home without its case here")
    return sys.modules[home]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
