"""Domains: typed state, tools, tasks, sandboxes. The public API for domain authors."""

from castbench.domain.database import Database, Record, RecordNotFound
from castbench.domain.domain import Domain, DomainDataError, ExpectedStateError, TaskChecks
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
]
