"""The typed shape of a failure attribution: which step broke a trial, whose fault it was, why.

A failed trial gets one `Attribution`; a passed trial that broke a rule or skipped a required check
without it showing in the final state gets a `NearMiss`. Both are derived from stored trials
(`castbench._results.attribution.rules`), so a run's shares can be recomputed at any time.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from castbench._grading import FieldDiff

__all__ = [
    "AGENT_CAUSES",
    "HARNESS_CAUSES",
    "USER_CAUSES",
    "Attribution",
    "Cause",
    "Evidence",
    "NearMiss",
    "Party",
    "UserFault",
    "party_of",
]

Party = Literal["agent", "user", "harness"]

AgentCause = Literal[
    "hallucination",
    "domain_violation",
    "wrong_tool",
    "tool_error_unrecovered",
    "missing_state_change",
    "wrong_state_update",
    "incomplete_reply",
    "unearned_outcome",
    "malformed_output",
    "ran_out_of_steps",
    "agent_error",
    "timeout",
]
UserCause = Literal[
    "leaked_goal", "contradicted_facts", "ended_early", "never_ended", "broke_persona", "user_error"
]
HarnessCause = Literal["harness_error", "infra_error"]
Cause = Literal[AgentCause, UserCause, HarnessCause]

AGENT_CAUSES: frozenset[str] = frozenset(get_args(AgentCause))
USER_CAUSES: frozenset[str] = frozenset(get_args(UserCause))
HARNESS_CAUSES: frozenset[str] = frozenset(get_args(HarnessCause))


def party_of(cause: str) -> Party:
    """Each cause belongs to exactly one party."""
    if cause in USER_CAUSES:
        return "user"
    if cause in HARNESS_CAUSES:
        return "harness"
    return "agent"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Evidence(_Frozen):
    rule: str
    """The rule that decided, by name (`first_unrecovered_invalid_action`, `user_ended_early`, ...)."""
    steps: list[int] = Field(default_factory=list)
    """The steps the rule read, the decisive one first."""
    diff: list[FieldDiff] = Field(default_factory=list)
    """The trial's state diff (the first few fields)."""
    detail: str = ""
    """One line a reader can check against the transcript."""


class Attribution(_Frozen):
    domain: str
    task: str
    trial: int
    step: int | None
    """The first decisive step (a `StepRecord.index`); None when the trial has no step to blame."""
    party: Party
    cause: Cause
    evidence: Evidence
    source: Literal["rules", "judge"] = "rules"


class UserFault(_Frozen):
    """Something the simulated user did that its scenario does not allow (a simulator fault),
    found in any trial, passed or not. `decisive`: enough on its own to explain a failure."""

    step: int | None
    cause: UserCause
    detail: str
    decisive: bool


class NearMiss(_Frozen):
    """A passed trial that broke a rule or skipped a required check (the labeler's verdict on an
    executed action) without it changing the final state."""

    domain: str
    task: str
    trial: int
    step: int
    cause: AgentCause
    detail: str
