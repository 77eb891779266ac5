"""What one trial leaves behind: the typed, stored record every figure is derived from."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from castbench._base.conversation import Action, ToolCallAction, ToolResultTurn, Usage, UserTurn, Verdict
from castbench._grading import Grade, PolicyBreak
from castbench._grading.labeler import ActionLabel
from castbench._records.migrations import RecordShape

__all__ = [
    "CLEAN_ENDS",
    "UNFINISHED_ENDS",
    "ActionLabel",
    "EndReason",
    "Proposal",
    "StepRecord",
    "TRIAL_RECORD",
    "StepTiming",
    "TrialRecord",
    "policy_breaks",
]

EndReason = Literal[
    "user_stop",
    "agent_stop",
    "transfer",
    "max_steps",
    "too_many_errors",
    "agent_error",
    "harness_error",
    "infra_error",
    "timeout",
]
"""Why a trial ended. `agent_stop`: the agent ended the conversation itself (a closing reply with
`end` or the stop marker, an MCP client that closed its session); graded like a user's ending.
`timeout`: an agent overran the step or trial time limit; the trial is
scored 0 (the agent's failure) and counted apart in summaries. `too_many_errors`: the agent's tool
calls answered errors `Limits.max_tool_errors` times (τ²'s limit, on its packs)."""

CLEAN_ENDS: frozenset[str] = frozenset({"user_stop", "agent_stop", "transfer"})
"""Ends where the conversation closed normally (a surface signal of success)."""
UNFINISHED_ENDS: frozenset[str] = frozenset({"agent_error", "max_steps", "too_many_errors", "timeout"})
"""Ends where the agent did not finish: such a trial fails even when the state is right."""


class Proposal(BaseModel):
    round: int
    """0 for the first proposal of a step, then 1, 2, ... for revisions after a critique."""
    action: Action
    verdict: Verdict | None = None
    label: ActionLabel | None = None
    """The labeler's truth (trials recorded before strict grading have it only with a critic)."""
    policy_s: float = 0.0
    critic_s: float = 0.0


class StepTiming(BaseModel):
    policy_s: float = 0.0
    critic_s: float = 0.0
    user_s: float = 0.0
    total_s: float = 0.0

    @property
    def overhead_s(self) -> float:
        """Everything but the agents' own time: the harness's cost of this step."""
        return max(0.0, self.total_s - self.policy_s - self.critic_s - self.user_s)


class StepRecord(BaseModel):
    index: int
    proposals: list[Proposal]
    action: Action | None
    """What was executed; `None` when a critic blocked the last proposal."""
    observation: ToolResultTurn | UserTurn | None = None
    user_stop: bool = False
    timing: StepTiming = Field(default_factory=StepTiming)
    fault: str | None = Field(None, exclude_if=lambda value: value is None)
    """The fault the harness injected instead of executing this step's tool call (`error`,
    `timeout`, `rate_limit`, `empty`, `malformed`; see `castbench._records.perturbations`)."""


class TrialRecord(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan="constants")
    """NaN and the infinities an agent put in its arguments are written as such, not as null
    (`castbench._base.lossless` stores records)."""

    domain: str
    domain_version: str
    task_id: str
    trial_index: int
    seed: int
    status: Literal["scored", "error"]
    reward: float | None
    end_reason: EndReason
    opening: str
    steps: list[StepRecord] = Field(default_factory=list)
    grade: Grade | None = None
    usage: dict[str, Usage] = Field(default_factory=dict)
    """Per role: policy, critic, user."""
    error: str | None = None
    attempts: int = 1
    """Tries it took (>1 when infrastructure errors forced a restart from the same seed)."""
    retried_for: list[str] = Field(default_factory=list)
    """Why each earlier try was abandoned (its infrastructure error), one per restart."""
    duration_s: float = 0.0
    agent_output: dict[str, str] = Field(default_factory=dict, exclude_if=lambda output: not output)
    """Per role: what its agent's processes wrote to stdout and stderr in this trial (import-path
    agents in workers; the first 64 KiB, with castbench's notes on what was dropped and which
    processes the agent left running were killed). Empty when it wrote nothing."""

    @property
    def passed(self) -> bool:
        return self.status == "scored" and self.reward == 1.0

    @property
    def strict_passed(self) -> bool | None:
        """Passed with no executed action breaking the policy; None when not graded strictly."""
        if self.status != "scored":
            return None
        if self.grade is None:  # a time-out: scored 0 without a grade
            return False if self.reward == 0.0 else None
        if self.grade.strict_reward is None:
            return None
        return self.grade.strict_reward == 1.0


TRIAL_RECORD = RecordShape("trial record")
"""How a `TrialRecord` is kept (store rows, exports): version 1, the shape since the first store.
Trials graded before strict grading keep no strict grade and label proposals only with a critic:
that is what they measured, not a shape to migrate."""


def policy_breaks(steps: list[StepRecord]) -> list[PolicyBreak]:
    """Executed tool calls that the labeler found to break the domain policy."""
    breaks: list[PolicyBreak] = []
    for step in steps:
        label = step.proposals[-1].label if step.proposals else None
        if (
            isinstance(step.action, ToolCallAction)
            and label is not None
            and label.failure_type == "domain_violation"
        ):
            breaks.append(PolicyBreak(step=step.index, tool=step.action.name, reason=label.reason))
    return breaks
