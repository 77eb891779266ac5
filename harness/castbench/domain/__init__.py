"""castbench's public API for pack authors: what a domain pack needs to define its data, tools,
tasks and rules, to generate and validate its tasks, to grade a trial, and to run and record one.

A pack imports from here only (with `castbench.agents` for an agent it ships, `castbench.formats`
for a run format): every other module of castbench is internal and may change without notice
(docs/api.md). Each name is written once, as the import statement that gives it. The names that
define a domain (its database, tools, tasks, rules) load with this module; the rest on first use
(`castbench._public`).
"""

# ruff: noqa: F401, I001  (each import is a public name, grouped by what it is for: no unused name, no reorder)

from __future__ import annotations

from typing import TYPE_CHECKING

from castbench import _public
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

if TYPE_CHECKING:
    # a domain's state, tools and facts beyond the core above
    from castbench._domain.database import Row, SEQUENCES_TABLE, Snapshot
    from castbench._domain.task import Rival
    from castbench._domain.common_tools import calculate, transfer_to_human_agents
    from castbench._domain.facts import Facts, ObservedFacts, TrueFacts

    # a published task set's domain: its identity look-ups, its tools' schemas, its derived rules
    from castbench._domain.identity import IDENTITY_PREFIX, identity_call, identity_facts
    from castbench._domain.published import first_person, schema_arguments_model
    from castbench._domain.derived_rules import DerivedRules

    # generating tasks (the authoring satellite's, plugins/castbench_authoring) and validating them
    from castbench_authoring.generation import (
        DraftBase,
        Families,
        Generator,
        Split,
        UniqueDigits,
        confirm_answer,
        customer_pools,
        mention,
        spoken_list,
        task_from_draft,
    )
    from castbench_authoring.claims import published_earned_spec
    from castbench_authoring.validate import validate_task

    # grading a trial, and replaying a published trajectory
    from castbench._grading.state_diff import state_diff
    from castbench_authoring.parity import Trajectory

    # running a trial, and the records of runs and trials it writes (what an importer builds)
    from castbench._trial.rollout import run_trial
    from castbench._trial.spec import TrialRuntime, TrialSpec
    from castbench._trial.deadline import TimeLimits
    from castbench._trial.seeds import trial_seed
    from castbench._trial.execution import AgentSet
    from castbench._records.config import Limits, RunConfig, Verification
    from castbench._records.trial import EndReason, Proposal, StepRecord, TrialRecord
    from castbench._grading.labeler import ActionLabel

# run formats moved to `castbench.formats`: each still resolves here, with a
# `CastbenchDeprecationWarning` naming its new place, until castbench 0.2.0
_MOVED = dict.fromkeys(("ArchiveError", "ExportedRun", "RunFormat"), "castbench.formats")

__all__, __getattr__, __dir__ = _public.names(globals(), moved=_MOVED)
