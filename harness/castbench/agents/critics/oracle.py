"""Privileged critics: they read the labeler's truth, so they bound what a critic can do.

- `oracle`: flags exactly the actions the labeler calls invalid (never an `unknown` one);
- `scripted:noisy?false_flag=F&miss=M`: the oracle with seeded mistakes, flagging a valid
  action with probability F and letting an invalid one through with probability M — a
  stand-in for an over-eager (GPT-4.1-like) or a lax critic, offline.
Marked privileged: their runs are upper bounds or simulations, not leaderboard entries.
"""

from __future__ import annotations

import random
from typing import ClassVar

from pydantic import BaseModel, Field

from castbench.agents.views import CriticView, PrivilegedBriefing
from castbench.conversation import Verdict
from castbench.domain import load_domain
from castbench.grading.labeler import ActionLabel, label_action

__all__ = ["NoisyCritic", "NoisyCriticParams", "OracleCritic"]


class OracleCritic:
    privileged: ClassVar[bool] = True

    def __init__(self, briefing: PrivilegedBriefing) -> None:
        if briefing.state is None:
            raise ValueError("the oracle critic needs the trial's state")
        self._briefing = briefing
        self._domain = load_domain(briefing.domain)

    def _truth(self, view: CriticView) -> ActionLabel:
        assert self._briefing.state is not None
        return label_action(
            self._domain, self._briefing.task, view.proposal, self._briefing.state(), view.conversation
        )

    def verify(self, view: CriticView) -> Verdict:
        truth = self._truth(view)
        if truth.label == "invalid":
            return Verdict(verdict="invalid", failure_type=truth.failure_type, explanation=truth.reason)
        return Verdict(verdict="valid", explanation=truth.reason)


class NoisyCriticParams(BaseModel):
    false_flag: float = Field(0.1, ge=0, le=1, description="chance to flag a valid action")
    miss: float = Field(0.1, ge=0, le=1, description="chance to pass an invalid action")


class NoisyCritic(OracleCritic):
    def __init__(self, briefing: PrivilegedBriefing, false_flag: float = 0.1, miss: float = 0.1) -> None:
        super().__init__(briefing)
        params = NoisyCriticParams(false_flag=false_flag, miss=miss)
        self._false_flag, self._miss = params.false_flag, params.miss
        self._rng = random.Random(f"noisy-critic:{briefing.seed}")

    def verify(self, view: CriticView) -> Verdict:
        truth = self._truth(view)
        draw = self._rng.random()
        if truth.label == "invalid" and draw >= self._miss:
            return Verdict(verdict="invalid", failure_type=truth.failure_type, explanation=truth.reason)
        if truth.label == "valid" and draw < self._false_flag:
            kind = self._rng.choice(["hallucination", "domain_violation", "wrong_tool"])
            return Verdict(
                verdict="invalid",
                failure_type=kind,
                explanation=f"this looks like a {kind.replace('_', ' ')}",
            )  # type: ignore[arg-type]
        return Verdict(verdict="valid", explanation="looks fine")
