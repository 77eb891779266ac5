"""What one trial leaves behind: the typed, stored record every figure is derived from."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from castbench.agents.conversation import Action, ToolResultTurn, Usage, UserTurn, Verdict
from castbench.grading import Grade

__all__ = ["ActionLabel", "EndReason", "Proposal", "StepRecord", "StepTiming", "TrialRecord"]

EndReason = Literal[
    "user_stop", "transfer", "max_steps", "agent_error", "harness_error", "infra_error", "timeout"
]
"""Why a trial ended. `timeout`: an agent overran the step or trial time limit; the trial is
scored 0 (the agent's failure) and counted apart in summaries."""


class ActionLabel(BaseModel):
    """The privileged labeler's truth about one proposed action (filled after the trial)."""

    label: Literal["valid", "invalid", "unknown"]
    failure_type: Literal["hallucination", "domain_violation", "wrong_tool", "none"] = "none"
    reason: str = ""


class Proposal(BaseModel):
    round: int
    """0 for the first proposal of a step, then 1, 2, ... for revisions after a critique."""
    action: Action
    verdict: Verdict | None = None
    label: ActionLabel | None = None
    """The labeler's truth, recorded when a critic is in the loop."""
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


class TrialRecord(BaseModel):
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
    duration_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "scored" and self.reward == 1.0
