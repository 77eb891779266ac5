"""What a trained critic has to beat, judged on the very calls it judged.

A trained critic that only learned which tools tend to be wrong is a lookup table. So every
critic figure of the plugin (`bench/cast_learning.py`, `castbench cast paper`'s board) comes with
these baselines, each scored against the labeler on the same held-out proposals with the same
interval (95%, resampling tasks):

- `majority per tool`: the verdict most train calls of that tool had (unseen tools: the overall
  majority);
- `majority per (previous action, tool)`: the same, keyed by the agent's previous action too
  (a tool name, `reply`, or `start`): it knows whether the call follows a look-up or a question;
- `rules critic`: castbench's model-free rules (`castbench.agents.critics.checks`) on the visible
  conversation, no training at all;
- the untrained base model, served like the trained critic (measured by the caller: it needs a
  server, these do not).

The lookup tables are learned from the annotations the critic was trained on: the same data,
no other information.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Literal

from pydantic import BaseModel

from castbench import CriticRecord, critic_intervals, critic_metrics
from castbench.agents import AgentTurn, ToolCallAction
from castbench.domain import TrialRecord, load_domain
from castbench_cast.annotations import Annotation, Key, annotated_moments, moment_key
from castbench_cast.trajectories import Moment, moments

__all__ = ["BASELINES", "BaselineFigures", "Lookup", "baseline_figures", "judged_calls", "previous_action"]

BASELINES = ("majority per tool", "majority per (previous action, tool)", "rules critic")

Verdict = Literal["flag", "pass"]


class BaselineFigures(BaseModel):
    """One critic (a baseline or the measured one) on the judged held-out calls."""

    name: str
    calls: int
    mcc: float | None
    mcc_ci: tuple[float, float] | None
    false_flag_rate: float | None
    false_flag_rate_ci: tuple[float, float] | None
    detection_rate: float | None
    flag_share_of_actions: float | None
    """Flagged valid calls / all judged calls: the paper's "flag ∧ valid" share (like for like)."""


def previous_action(moment: Moment) -> str:
    """The agent's previous action before `moment`: a tool's name, `reply`, or `start`."""
    for event in reversed(moment.history):
        if isinstance(event, AgentTurn):
            action = event.action
            return action.name if isinstance(action, ToolCallAction) else "reply"
    return "start"


def _keys(moment: Moment) -> dict[str, tuple[str, ...]]:
    action = moment.proposal.action
    tool = action.name if isinstance(action, ToolCallAction) else "reply"
    return {BASELINES[0]: (tool,), BASELINES[1]: (previous_action(moment), tool)}


class Lookup:
    """Majority verdicts per key, learned from annotated train moments."""

    def __init__(self, records: Iterable[TrialRecord], annotations: dict[Key, Annotation]) -> None:
        self.votes: dict[str, dict[tuple[str, ...], Counter[str]]] = {name: {} for name in BASELINES[:2]}
        overall: Counter[str] = Counter()
        for record, moment in annotated_moments(records):
            annotation = annotations.get(moment_key(record, moment))
            if annotation is None or annotation.parse_error is not None:
                continue
            overall[annotation.verdict] += 1
            for name, key in _keys(moment).items():
                self.votes[name].setdefault(key, Counter())[annotation.verdict] += 1
        self.default = _majority(overall)

    def verdict(self, name: str, moment: Moment) -> Verdict:
        votes = self.votes[name].get(_keys(moment)[name])
        return "flag" if (_majority(votes) if votes else self.default) == "invalid" else "pass"


def _majority(votes: Counter[str]) -> str:
    """The commoner verdict; a tie passes (flagging costs the agent a turn)."""
    return "invalid" if votes["invalid"] > votes["valid"] else "valid"


def judged_calls(records: Iterable[TrialRecord]) -> Iterator[tuple[TrialRecord, Moment]]:
    """Every proposed tool call a critic judged and the labeler labelled, in its context."""
    for record in records:
        if record.status != "scored":
            continue
        for moment in moments(record):
            proposal = moment.proposal
            if (
                isinstance(proposal.action, ToolCallAction)
                and proposal.verdict is not None
                and proposal.label is not None
                and proposal.label.label in ("valid", "invalid")
            ):
                yield record, moment


def _rules(record: TrialRecord, moment: Moment) -> Verdict:
    from castbench.agents import call_findings

    action = moment.proposal.action
    assert isinstance(action, ToolCallAction)
    return "flag" if call_findings(load_domain(record.domain), action, list(moment.history)) else "pass"


def _figures(name: str, judged: list[tuple[TrialRecord, Moment, Verdict]]) -> BaselineFigures:
    by_task: dict[tuple[str, str], list[CriticRecord]] = {}
    for record, moment, verdict in judged:
        label = moment.proposal.label
        assert label is not None
        by_task.setdefault((record.domain, record.task_id), []).append(
            CriticRecord(verdict, label.label, None)  # type: ignore[arg-type]
        )
    flat = [item for group in by_task.values() for item in group]
    metrics = critic_metrics(flat)
    intervals = critic_intervals(list(by_task.values()))
    flagged_valid = sum(item.verdict == "flag" and item.label == "valid" for item in flat)
    return BaselineFigures(
        name=name,
        calls=len(flat),
        mcc=metrics.mcc,
        mcc_ci=intervals.mcc,
        false_flag_rate=metrics.false_flag_rate,
        false_flag_rate_ci=intervals.false_flag_rate,
        detection_rate=metrics.detection_rate,
        flag_share_of_actions=flagged_valid / len(flat) if flat else None,
    )


def baseline_figures(
    held_out: Iterable[TrialRecord], lookup: Lookup, measured: str = "trained critic"
) -> list[BaselineFigures]:
    """The measured critic (its stored verdicts: an unreadable one counts as the pass it was
    recorded as) and each baseline, on the judged calls of `held_out`."""
    calls = list(judged_calls(held_out))
    deciders: dict[str, Callable[[TrialRecord, Moment], Verdict]] = {
        measured: lambda _, moment: (
            "flag" if moment.proposal.verdict and moment.proposal.verdict.flags else "pass"
        ),
        BASELINES[0]: lambda _, moment: lookup.verdict(BASELINES[0], moment),
        BASELINES[1]: lambda _, moment: lookup.verdict(BASELINES[1], moment),
        BASELINES[2]: _rules,
    }
    return [
        _figures(name, [(record, moment, decide(record, moment)) for record, moment in calls])
        for name, decide in deciders.items()
    ]
