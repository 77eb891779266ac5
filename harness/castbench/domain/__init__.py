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

from castbench.deprecation import moved
from castbench.domain.database import Database, Record, RecordNotFound
from castbench.domain.domain import Domain, DomainDataError, ExpectedStateError, TaskChecks
from castbench.domain.keeping import kept
from castbench.domain.pack_options import PackOption, PackOptionError, PackOptions
from castbench.domain.registry import (
    UnknownDomainError,
    available_domains,
    load_domain,
    register_domain,
    resolve_domains,
)
from castbench.domain.rules import DomainRules, ObservedCall, RuleFinding
from castbench.domain.task import (
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
from castbench.domain.tools import Observation, Tool, ToolCrash, ToolError, Toolkit, read_tool, write_tool

# the names read on first use, grouped by the module that defines each
_HOMES: dict[str, tuple[str, ...]] = {
    # a domain's state, tools and facts beyond the core above
    "castbench.domain.database": ("Row", "SEQUENCES_TABLE", "Snapshot"),
    "castbench.domain.task": ("Rival",),
    "castbench.domain.common_tools": ("calculate", "transfer_to_human_agents"),
    "castbench.domain.facts": ("Facts", "ObservedFacts", "TrueFacts"),
    # a published task set's domain: its identity look-ups, its tools' schemas, its derived rules
    "castbench.domain.identity": ("IDENTITY_PREFIX", "identity_call", "identity_facts"),
    "castbench.domain.published": ("first_person", "schema_arguments_model"),
    "castbench.domain.derived_rules": ("DerivedRules",),
    # generating and validating tasks (generating: the authoring satellite's, plugins/castbench_authoring)
    "castbench_authoring.generation": (
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
    "castbench_authoring.claims": ("published_earned_spec",),
    "castbench.authoring.validate": ("validate_task",),
    # grading a trial, and replaying a published trajectory
    "castbench.grading.state_diff": ("state_diff",),
    "castbench.runner.parity": ("Trajectory",),
    # running a trial, and the records of runs and trials it writes (what an importer builds)
    "castbench.runner.rollout": ("run_trial",),
    "castbench.runner.spec": ("TrialRuntime", "TrialSpec"),
    "castbench.runner.deadline": ("TimeLimits",),
    "castbench.runner.seeds": ("trial_seed",),
    "castbench.runner.execution": ("AgentSet",),
    "castbench.records.config": ("Limits", "RunConfig", "Verification"),
    "castbench.records.trial": ("EndReason", "Proposal", "StepRecord", "TrialRecord"),
    "castbench.grading.labeler": ("ActionLabel",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

_MOVED = {
    "ArchiveError": "castbench.formats",
    "ExportedRun": "castbench.formats",
    "RunFormat": "castbench.formats",
}
"""Names that moved to another public module: each still resolves here, with a
`DeprecationWarning` naming its new place, until the removal release (`castbench.deprecation`)."""

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
    # (`monkeypatch.setattr(castbench.api, "evaluate", ...)`) is seen by every later reader
    return getattr(_module(home), name)


def _module(home: str) -> ModuleType:
    """The module `home` names, by a plain import statement: the import contract sees each edge
    (pyproject's `[tool.importlinter]`), and each module loads on first use only."""
    match home:
        case "castbench.domain.database":
            import castbench.domain.database  # noqa: F401
        case "castbench.domain.task":
            import castbench.domain.task  # noqa: F401
        case "castbench.domain.common_tools":
            import castbench.domain.common_tools  # noqa: F401
        case "castbench.domain.facts":
            import castbench.domain.facts  # noqa: F401
        case "castbench.domain.identity":
            import castbench.domain.identity  # noqa: F401
        case "castbench.domain.published":
            import castbench.domain.published  # noqa: F401
        case "castbench.domain.derived_rules":
            import castbench.domain.derived_rules  # noqa: F401
        case "castbench_authoring.generation":
            import castbench_authoring.generation  # noqa: F401
        case "castbench_authoring.claims":
            import castbench_authoring.claims  # noqa: F401
        case "castbench.authoring.validate":
            import castbench.authoring.validate  # noqa: F401
        case "castbench.grading.state_diff":
            import castbench.grading.state_diff  # noqa: F401
        case "castbench.runner.parity":
            import castbench.runner.parity  # noqa: F401
        case "castbench.runner.rollout":
            import castbench.runner.rollout  # noqa: F401
        case "castbench.runner.spec":
            import castbench.runner.spec  # noqa: F401
        case "castbench.runner.deadline":
            import castbench.runner.deadline  # noqa: F401
        case "castbench.runner.seeds":
            import castbench.runner.seeds  # noqa: F401
        case "castbench.runner.execution":
            import castbench.runner.execution  # noqa: F401
        case "castbench.records.config":
            import castbench.records.config  # noqa: F401
        case "castbench.records.trial":
            import castbench.records.trial  # noqa: F401
        case "castbench.grading.labeler":
            import castbench.grading.labeler  # noqa: F401
        case "castbench.formats":
            import castbench.formats  # noqa: F401
        case _:
            raise AssertionError(f"{home}: a home without its case here")
    return sys.modules[home]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
