"""A run's configuration: everything that decides its scores, hashed to recognise a resume."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, Field

from castbench.grading import GradingMode
from castbench.runner.rollout import Limits, Verification

__all__ = ["RunConfig"]


class RunConfig(BaseModel):
    domains: dict[str, str]
    """Domain name -> version."""
    split: str = "test"
    task_ids: list[str] | None = None
    policy: str
    critic: str = "none"
    user: str = "scripted"
    trials: int = Field(8, ge=1)
    seed: int = 0
    limits: Limits = Field(default_factory=Limits)
    verification: Verification = Field(default_factory=Verification)
    traits: dict[str, str] = Field(default_factory=dict)
    """The simulated user's trait profile (empty: no traits)."""
    privileged: list[str] = Field(default_factory=list)
    """Roles whose agent read the ground truth (such runs are upper bounds, not entries)."""
    in_process: list[str] = Field(default_factory=list)
    """Roles whose import-path agent ran inside castbench's process (`--in-process`, for
    debugging): it could have read the ground truth, so leaderboards refuse the run."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further scoring-relevant settings (model settings per role, ...)."""
    grading: GradingMode | None = None
    """How required outputs are matched: `castbench` (numbers as numbers, whole words) or τ-Bench's
    `tau` (plain substring). None marks a run recorded before grading modes existed: its outputs
    were matched the `tau` way, and `grading_mode` says so (a verifier re-grades it that way)."""

    @property
    def grading_mode(self) -> GradingMode:
        return self.grading or "tau"

    def config_hash(self) -> str:
        # an empty `in_process` is left out, so runs stored before the field existed still resume
        exclude = None if self.in_process else {"in_process"}
        canonical = json.dumps(
            self.model_dump(mode="json", exclude=exclude), sort_keys=True, separators=(",", ":")
        )
        return hashlib.sha256(canonical.encode()).hexdigest()
