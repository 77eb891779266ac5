"""A trial's counterfactual branches, one per critic verdict, as `castbench_analyses.counterfactual`
plays them and `castbench_analyses.counterfactual_metrics` counts them (see the former for what a branch
is and what it assumes)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from castbench._records.trial import EndReason, StepRecord

__all__ = ["Branch", "BranchPoint", "Effect", "TrialBranches"]

Effect = Literal["saved", "cost", "unchanged", "unscored"]
"""What the verdict the trial took did, against its branch: `saved` the trial (it passed, the
branch failed), `cost` it (it failed, the branch passed), changed nothing, or could not be told
(the branch ended unscored: an infrastructure error or a simulated user's failure)."""


class BranchPoint(BaseModel):
    """One critic verdict of a trial: where a branch starts."""

    step: int
    round: int
    flagged: bool
    """The verdict the trial took: a flag (True) or a pass."""
    label: Literal["valid", "invalid", "unknown"] | None = None
    """The labeler's truth about the proposal (None in an unlabelled trial)."""


class Branch(BaseModel):
    point: BranchPoint
    played: bool
    """False when the opposite verdict would have done the same (a verdict in the last round of a
    run that executes an exhausted proposal anyway): nothing was played."""
    passed: bool
    """The branch succeeded (`castbench_analyses.counterfactual.succeeded`)."""
    reward: float | None
    end_reason: EndReason | None
    steps: list[StepRecord]
    """The branch's steps from the branch point on (what it did differently)."""
    effect: Effect


class TrialBranches(BaseModel):
    """A trial and a branch for each of its critic verdicts."""

    domain: str
    task_id: str
    trial_index: int
    seed: int
    passed: bool
    """The trial succeeded (`castbench_analyses.counterfactual.succeeded`)."""
    branches: list[Branch]
