"""A stored trial as the agents saw it: for every proposal, the visible conversation before it
and the critiques of the same step that came before it.

It rebuilds what the rollout engine showed (`castbench._trial.episode`): the opening, then for
each step the executed action (or the rejected one a critic blocked) and its observation. A
deployed critic saw the conversation and the proposal; the policy also saw the critiques of the
step's earlier rounds. Nothing privileged is in these events: labels and grades stay on the
records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from castbench.agents import AgentTurn, CritiqueTurn, Event, ReplyAction, UserTurn
from castbench.domain import Proposal, StepRecord, TrialRecord

__all__ = ["Moment", "moments", "trial_key"]


@dataclass(frozen=True)
class Moment:
    """One proposal in its context."""

    step: StepRecord
    proposal: Proposal
    history: tuple[Event, ...]
    """The visible conversation before the step (what a critic reads)."""
    critiques: tuple[CritiqueTurn, ...]
    """Rejections of this step's earlier proposals (what the policy read while revising)."""

    @property
    def executed(self) -> bool:
        """This proposal is the step's action that ran."""
        return self.step.action is not None and self.proposal is self.step.proposals[-1]


def trial_key(record: TrialRecord) -> tuple[str, str, int]:
    return record.domain, record.task_id, record.trial_index


def moments(record: TrialRecord) -> Iterator[Moment]:
    events: list[Event] = [UserTurn(text=record.opening)]
    for step in record.steps:
        history = tuple(events)
        critiques: list[CritiqueTurn] = []
        for proposal in step.proposals:
            yield Moment(step, proposal, history, tuple(critiques))
            if proposal.verdict is not None and proposal.verdict.flags:
                critiques.append(CritiqueTurn(verdict=proposal.verdict, proposal=proposal.action))
        shown = step.action if step.action is not None else step.proposals[-1].action
        blocked = step.action is None
        call_id = None if isinstance(shown, ReplyAction) and not blocked else f"call_{step.index}"
        events.append(AgentTurn(action=shown, call_id=call_id))
        if step.observation is not None:
            events.append(step.observation)
