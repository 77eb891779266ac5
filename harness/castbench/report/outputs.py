"""How much of what the agents wrote the harness could not use, and what their model calls cost,
counted from stored trial records.

A model's bad output is kept as data (`castbench.models.parse`); these counts make it visible
next to pass^k, so a run whose policy mostly wrote unusable text, or whose critic could not be
read, never passes for one whose agents answered and were wrong. One definition each:
- a malformed action: a proposal that is a `MalformedAction` (no usable tool call or reply);
- an unparseable verdict: a critic verdict with `parse_error` set (its answer could not be read
  in full; what was recorded instead is `castbench.models.parse.UNREADABLE_VERDICT` when no
  verdict could be read at all);
- an unusable user turn: a simulated user's empty or cut-off turn (`Usage.unusable`).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from castbench.conversation import MalformedAction, Usage
from castbench.records.trial import TrialRecord

__all__ = ["OutputCounts", "output_counts"]


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


def output_counts(records: Iterable[TrialRecord]) -> OutputCounts:
    spent, user = Usage(), Usage()
    actions = malformed = verdicts = unparseable = turns = trials = 0
    for record in records:
        trials += 1
        for role, usage in record.usage.items():
            spent = spent + usage
            if role == "user":
                user = user + usage
        for step in record.steps:
            turns += getattr(step.observation, "role", None) == "user"
            for proposal in step.proposals:
                actions += 1
                malformed += isinstance(proposal.action, MalformedAction)
                if proposal.verdict is not None:
                    verdicts += 1
                    unparseable += proposal.verdict.parse_error is not None
    return OutputCounts(
        trials=trials,
        actions=actions,
        malformed_actions=malformed,
        verdicts=verdicts,
        unparseable_verdicts=unparseable,
        user_turns=turns,
        unusable_user_turns=user.unusable,
        failed_calls=spent.failed_calls,
        tokens_in=spent.input_tokens,
        tokens_out=spent.output_tokens,
        model_calls=spent.calls,
        model_s=spent.latency_s,
    )
