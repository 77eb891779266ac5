"""How much of what the agents wrote the harness could not use, and what their model calls cost,
counted from stored trial records.

A model's bad output is kept as data (`castbench._agents.models.parse`); these counts make it visible
next to pass^k, so a run whose policy mostly wrote unusable text, or whose critic could not be
read, never passes for one whose agents answered and were wrong. One definition each:
- a malformed action: a proposal that is a `MalformedAction` (no usable tool call or reply);
- an unparseable verdict: a critic verdict with `parse_error` set (its answer could not be read
  in full; what was recorded instead is `castbench._agents.models.parse.UNREADABLE_VERDICT` when no
  verdict could be read at all);
- an unusable user turn: a simulated user's empty or cut-off turn (`Usage.unusable`).
"""

from __future__ import annotations

from pydantic import BaseModel

from castbench._base.conversation import MalformedAction, Usage
from castbench._records.trial import TrialRecord

__all__ = ["OutputCounts", "OutputTally"]


class OutputCounts(BaseModel):
    trials: int = 0
    """Trial records counted (scored and errored)."""
    actions: int = 0
    """Actions the policy proposed (revisions after a critique included)."""
    malformed_actions: int = 0
    verdicts: int = 0
    unparseable_verdicts: int = 0
    user_turns: int = 0
    """Turns the simulated user answered (its opening not included)."""
    unusable_user_turns: int = 0
    failed_calls: int = 0
    """Model calls, all roles, that got no answer (failed after retries, timed out, refused)."""
    tokens_in: int = 0
    tokens_out: int = 0
    model_calls: int = 0
    model_s: float = 0.0
    """Seconds spent waiting for models, all roles, failed calls included."""

    def per_trial(self, value: float) -> float:
        return value / self.trials if self.trials else 0.0


class OutputTally:
    """A run's output counts, one record at a time (a summary reads a run once, keeping no record)."""

    def __init__(self) -> None:
        self.spent, self.user = Usage(), Usage()
        self.actions = self.malformed = self.verdicts = self.unparseable = self.turns = self.trials = 0

    def add(self, record: TrialRecord) -> None:
        self.trials += 1
        for role, usage in record.usage.items():
            self.spent = self.spent + usage
            if role == "user":
                self.user = self.user + usage
        for step in record.steps:
            self.turns += getattr(step.observation, "role", None) == "user"
            for proposal in step.proposals:
                self.actions += 1
                self.malformed += isinstance(proposal.action, MalformedAction)
                if proposal.verdict is not None:
                    self.verdicts += 1
                    self.unparseable += proposal.verdict.parse_error is not None

    def result(self) -> OutputCounts:
        spent = self.spent
        return OutputCounts(
            trials=self.trials,
            actions=self.actions,
            malformed_actions=self.malformed,
            verdicts=self.verdicts,
            unparseable_verdicts=self.unparseable,
            user_turns=self.turns,
            unusable_user_turns=self.user.unusable,
            failed_calls=spent.failed_calls,
            tokens_in=spent.input_tokens,
            tokens_out=spent.output_tokens,
            model_calls=spent.calls,
            model_s=spent.latency_s,
        )
