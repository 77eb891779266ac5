"""Earned refusals: a refusal or a "no change" passes only when the agent did the work behind it.

A do-nothing agent leaves the state of a `refuse` or `no_change` task right by construction, so
the state diff alone hands it the pass. `check_earned` reads the trial's visible conversation
and says which parts of the task's `EarnedSpec` it lacks:

- a required look-up with no successful call that matches one of its equivalent calls (same
  tool; every argument the requirement lists equal, text case- and whitespace-insensitively,
  numbers by value; arguments it leaves out are free);
- a required reason (the blocking fact) that no agent reply states;
- an offer: no agent reply put the concrete change to the user as a question (every offer
  mention in one message holding a "?", and none of `offer_rivals`: a question that offers
  every change for every record offers nothing in particular), which a correct agent does
  before the user declines;
- a false claim: a reply states (not negated, by the castbench rule of `grading.outputs`) a
  wording of one of the task's `false_claims`, a reason that does not hold or a value from a
  record the task is not about. Reasons are graded for what they claim: the right reason amid
  every reason the policy knows is a spray, not an explanation;
- an answer amid its rivals: a required output stated only in replies that also name another
  value of its kind (`rivals`: the other flights of the search, the other orders' totals).

It needs nothing but the spec and the events, so any task set can use it: a τ-style pack builds
an `EarnedSpec` from its gold read calls and calls `check_earned` on the same conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from castbench.conversation import AgentTurn, Event, ReplyAction, ToolCallAction, ToolResultTurn
from castbench.domain.task import EarnedSpec, Lookup, Mention, Rival, ToolCall
from castbench.grading.outputs import Said, missing_outputs

__all__ = ["EarnedCheck", "check_earned", "claimed", "executed_calls", "matches", "offers"]


class EarnedCheck(BaseModel):
    """What a trial lacked to earn its refusal or "no change"; all empty when it was earned."""

    missing_lookups: list[str] = []
    """Each unmet look-up, as its first equivalent call in canonical form."""
    missing_reasons: list[str] = []
    """Each unstated reason, as its first wording."""
    missing_offer: list[str] = []
    """The offer's mentions, when no question to the user held them all (and no rival)."""
    false_claims: list[str] = []
    """Each false claim a reply made, as the wording it used."""
    amid_rivals: list[str] = []
    """Each required output stated only beside other values of its kind."""

    @property
    def ok(self) -> bool:
        return not (
            self.missing_lookups
            or self.missing_reasons
            or self.missing_offer
            or self.false_claims
            or self.amid_rivals
        )

    def problems(self) -> list[str]:
        """One line per unmet requirement, for a trial's failure report."""
        lines = [
            *(f"look-up not made: {call}" for call in self.missing_lookups),
            *(f"reason not stated: {reason!r}" for reason in self.missing_reasons),
        ]
        if self.missing_offer:
            named = ", ".join(map(repr, self.missing_offer))
            lines.append(f"change not offered before the decline (a question naming {named})")
        lines.extend(f"false claim stated: {claim!r}" for claim in self.false_claims)
        lines.extend(f"output {output!r} stated only amid other candidates" for output in self.amid_rivals)
        return lines


def _same(want: Any, got: Any) -> bool:
    if isinstance(want, str) and isinstance(got, str):
        return " ".join(want.lower().split()) == " ".join(got.lower().split())
    if isinstance(want, int | float) and isinstance(got, int | float) and not isinstance(got, bool):
        return float(want) == float(got)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_same(a, b) for a, b in zip(want, got, strict=True))
    return bool(want == got)


def matches(required: ToolCall, name: str, arguments: Mapping[str, Any]) -> bool:
    """Does a call of `name` with `arguments` satisfy `required`?"""
    return name == required.name and all(
        key in arguments and _same(value, arguments[key]) for key, value in required.arguments.items()
    )


def executed_calls(conversation: Sequence[Event]) -> list[tuple[str, dict[str, Any]]]:
    """The agent's tool calls that ran without an error, in order."""
    results = {event.call_id: event for event in conversation if isinstance(event, ToolResultTurn)}
    calls = []
    for event in conversation:
        if not (isinstance(event, AgentTurn) and isinstance(event.action, ToolCallAction)):
            continue
        result = results.get(event.call_id or "")
        if result is None or result.error or not isinstance(event.action.arguments, dict):
            continue
        calls.append((event.action.name, event.action.arguments))
    return calls


def _stated(mention: Mention, replies: Sequence[str]) -> bool:
    return any(not missing_outputs([wording], replies) for wording in mention.any_of)


def claimed(spec: EarnedSpec, replies: Sequence[str]) -> list[str]:
    """The false claims `replies` make, each as the first of its wordings they state."""
    said = Said(replies)
    return [
        wording
        for claim in spec.false_claims
        if (wording := next((w for w in claim.any_of if said.says(w)), None)) is not None
    ]


def offers(spec: EarnedSpec, question: str) -> bool:
    """Does `question` put the task's change to the user: every offer mention, and no rival?"""
    said = Said([question])
    return all(_stated(mention, [question]) for mention in spec.offer) and not any(
        said.says(rival) for rival in spec.offer_rivals
    )


def _amid_rivals(rival: Rival, replies: Sequence[str]) -> bool:
    """Stated, but never in a reply free of its rivals (unstated outputs are reported apart)."""
    stating = [reply for reply in replies if not missing_outputs([rival.output], [reply])]
    return bool(stating) and all(
        any(Said([reply]).says(other) for other in rival.others) for reply in stating
    )


def _looked_up(lookup: Lookup, calls: Sequence[tuple[str, dict[str, Any]]]) -> bool:
    return any(matches(required, name, arguments) for required in lookup.any_of for name, arguments in calls)


def check_earned(spec: EarnedSpec, conversation: Sequence[Event]) -> EarnedCheck:
    """What `conversation` (a trial's events, in order) lacks to earn the outcome `spec` guards."""
    calls = executed_calls(conversation)
    replies = [
        event.action.text
        for event in conversation
        if isinstance(event, AgentTurn) and isinstance(event.action, ReplyAction)
    ]
    questions = [reply for reply in replies if "?" in reply]
    offered = not spec.offer or any(offers(spec, question) for question in questions)
    return EarnedCheck(
        missing_lookups=[
            lookup.any_of[0].canonical() for lookup in spec.lookups if not _looked_up(lookup, calls)
        ],
        missing_reasons=[reason.any_of[0] for reason in spec.reasons if not _stated(reason, replies)],
        missing_offer=[] if offered else [mention.any_of[0] for mention in spec.offer],
        false_claims=claimed(spec, replies),
        amid_rivals=[rival.output for rival in spec.rivals if _amid_rivals(rival, replies)],
    )
