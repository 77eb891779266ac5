"""The types of `castbench.domain`'s public names, which the module reads from their own modules on first
use (its docstring says why): imported as `__init__.py` lists them. Keep the two
together (tests/core/test_public_api.py)."""

from castbench._authoring.claims import (
    published_earned_spec,
)
from castbench._authoring.generation import (
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
from castbench._authoring.validate import (
    validate_task,
)
from castbench._domain.common_tools import (
    calculate,
    transfer_to_human_agents,
)
from castbench._domain.database import (
    SEQUENCES_TABLE,
    Database,
    Record,
    RecordNotFound,
    Row,
    Snapshot,
)
from castbench._domain.derived_rules import (
    DerivedRules,
)
from castbench._domain.domain import (
    Domain,
    DomainDataError,
    ExpectedStateError,
    TaskChecks,
)
from castbench._domain.facts import (
    Facts,
    ObservedFacts,
    TrueFacts,
)
from castbench._domain.identity import (
    IDENTITY_PREFIX,
    identity_call,
    identity_facts,
)
from castbench._domain.keeping import kept
from castbench._domain.pack_options import (
    PackOption,
    PackOptionError,
    PackOptions,
)
from castbench._domain.published import (
    first_person,
    schema_arguments_model,
)
from castbench._domain.registry import (
    UnknownDomainError,
    available_domains,
    load_domain,
    register_domain,
    resolve_domains,
)
from castbench._domain.rules import (
    DomainRules,
    ObservedCall,
    RuleFinding,
)
from castbench._domain.task import (
    DeviceStep,
    EarnedSpec,
    Fact,
    GradingSpec,
    Lookup,
    Mention,
    Rival,
    Task,
    TaskFileError,
    ToolCall,
    UserScenario,
)
from castbench._domain.tools import (
    Observation,
    Tool,
    ToolCrash,
    ToolError,
    Toolkit,
    read_tool,
    write_tool,
)
from castbench._grading.labeler import (
    ActionLabel,
)
from castbench._grading.state_diff import (
    state_diff,
)
from castbench._records.config import (
    Limits,
    RunConfig,
    Verification,
)
from castbench._records.trial import (
    EndReason,
    Proposal,
    StepRecord,
    TrialRecord,
)
from castbench._run.parity import (
    Trajectory,
)
from castbench._trial.deadline import (
    TimeLimits,
)
from castbench._trial.execution import (
    AgentSet,
)
from castbench._trial.rollout import (
    run_trial,
)
from castbench._trial.seeds import (
    trial_seed,
)
from castbench._trial.spec import (
    TrialRuntime,
    TrialSpec,
)

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
    "Row",
    "SEQUENCES_TABLE",
    "Snapshot",
    "Rival",
    "calculate",
    "transfer_to_human_agents",
    "Facts",
    "ObservedFacts",
    "TrueFacts",
    "IDENTITY_PREFIX",
    "identity_call",
    "identity_facts",
    "first_person",
    "schema_arguments_model",
    "DerivedRules",
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
    "published_earned_spec",
    "validate_task",
    "state_diff",
    "Trajectory",
    "run_trial",
    "TrialRuntime",
    "TrialSpec",
    "TimeLimits",
    "trial_seed",
    "AgentSet",
    "Limits",
    "RunConfig",
    "Verification",
    "EndReason",
    "Proposal",
    "StepRecord",
    "TrialRecord",
    "ActionLabel",
]
