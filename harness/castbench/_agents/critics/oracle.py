"""Privileged critics: they read the labeler's truth, so they bound what a critic can do.

- `oracle`: flags exactly the actions the labeler calls invalid (never an `unknown` one);
- `scripted:noisy?false_flag=F&miss=M`: the oracle with seeded mistakes, flagging a valid
  action with probability F and letting an invalid one through with probability M — a
  stand-in for an over-eager (GPT-4.1-like) or a lax critic, offline. `draws=keyed` gives each
  verdict a generator of its own, keyed by the proposal and the conversation's length, as the
  noisy policy's keyed draws do (for counterfactual branches: see `NoisyParams`).
Marked privileged: their runs are upper bounds or simulations, not leaderboard entries.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from castbench._agents.views import CriticView, PrivilegedBriefing
from castbench._base.conversation import Verdict
from castbench._domain.registry import load_domain
from castbench._grading.labeler import ActionLabel, label_action

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
    draws: Literal["stream", "keyed"] = Field(
        "stream", description="one random stream, or a generator per verdict (counterfactual branches)"
    )


class NoisyCritic(OracleCritic):
    def __init__(
        self,
        briefing: PrivilegedBriefing,
        false_flag: float = 0.1,
        miss: float = 0.1,
        draws: Literal["stream", "keyed"] = "stream",
    ) -> None:
        super().__init__(briefing)
        params = NoisyCriticParams(false_flag=false_flag, miss=miss, draws=draws)
        self._false_flag, self._miss = params.false_flag, params.miss
        self._rng = random.Random(f"noisy-critic:{briefing.seed}")
        self._keyed, self._seed = params.draws == "keyed", briefing.seed
        self._taken: Counter[str] = Counter()

    def _draws(self, view: CriticView) -> random.Random:
        if not self._keyed:
            return self._rng
        proposal = view.proposal.model_dump(mode="json", exclude={"usage"})
        key = json.dumps([len(view.conversation), proposal], sort_keys=True)
        self._taken[key] += 1
        return random.Random(f"noisy-critic:{self._seed}:{key}:{self._taken[key]}")

    def verify(self, view: CriticView) -> Verdict:
        truth = self._truth(view)
        rng = self._draws(view)
        draw = rng.random()
        if truth.label == "invalid" and draw >= self._miss:
            return Verdict(verdict="invalid", failure_type=truth.failure_type, explanation=truth.reason)
        if truth.label == "valid" and draw < self._false_flag:
            kind = rng.choice(["hallucination", "domain_violation", "wrong_tool"])
            return Verdict(
                verdict="invalid",
                failure_type=kind,
                explanation=f"this looks like a {kind.replace('_', ' ')}",
            )  # type: ignore[arg-type]
        return Verdict(verdict="valid", explanation="looks fine")
