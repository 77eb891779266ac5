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

import re
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from pydantic import BaseModel

from castbench._base.conversation import AgentTurn, Event, ReplyAction, ToolCallAction, ToolResultTurn
from castbench._base.dialogue import asks_anything_else, asks_confirmation
from castbench._domain.task import EarnedSpec, Lookup, Mention, Rival, ToolCall
from castbench._grading.confirmation import Records as SeenRecords
from castbench._grading.outputs import Said, missing_outputs, output_tokens, output_words
from castbench._grading.ties import Piece, Records, Segment, bare, form, pieces, segments, tied

__all__ = ["EarnedCheck", "check_earned", "claimed", "executed_calls", "matches", "offers", "seen_records"]


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


_NEGATION_FORMS = ("not", "not yet", "not been", "not yet been", "never", "never been", "no longer")
"""How a denial is said: "not delivered" is also "hasn't been delivered", "isn't yet delivered"."""


def _forms(wording: str) -> list[str]:
    """`wording` and, for a denial ("not delivered"), its other negation forms."""
    words = [token.text for token in output_tokens(wording)]
    if not words or words[0] != "not":
        return [wording]
    rest = [word for word in words[1:] if word not in ("yet", "been")]
    return [wording, *(" ".join([*form.split(), *rest]) for form in _NEGATION_FORMS)]


_RULE = re.compile(
    r"\b(?:(?P<only>only)|(?P<negated>not|never|cannot|can't|can not|won't|isn't|aren't))\b"
    r"[^.;,!?:\n]*?\b(?P<condition>once|after|if|when|before|until|unless)\s+(?P<rest>[^.;,!?:\n]+)",
    re.IGNORECASE,
)
_SUBJECT = re.compile(
    r"^(?:(?:it|they|there|the|an?|your|its|their|this|that|order|orders|item|items|reservation|"
    r"reservations|flight|flights|prescription|prescriptions|line|lines|bill|bills|appointment|"
    r"appointments|\w+'s)\s+){0,3}"
    r"(?:(?:has|have|had|is|are|was|were|be|been|gets|get|got|already|still)\s+)+",
    re.IGNORECASE,
)
_MORE_CONDITIONS = re.compile(
    r"(?:,|;|\bor\b|\band\b)\s+(?:or\s+|and\s+)?(?:only\s+)?(?:once|after|if|when|before|until|unless)\b",
    re.IGNORECASE,
)
"""A condition that continues a rule ("only possible before it is processed, or unless it is
delivered"): a second rule."""


def _implied(reply: str) -> list[str]:
    """What a rule stated as the reason for a refusal says of the record: "returns are only
    possible once an order has been delivered" says it is "not delivered"; "a cancellation is
    only possible before it is processed" and "it can't be cancelled once it has been processed"
    say it is "processed"; "it can't be returned until it has been delivered", "not delivered".
    A reply that states more than one rule states none: the reason is one fact, and two rules
    ("only possible before it is processed, or unless it is delivered"), let alone every rule of
    the policy each inside a condition, hedge between reasons rather than give one."""
    found = []
    text = reply.replace("’", "'")
    if len(_MORE_CONDITIONS.findall(text)) + len(_RULE.findall(text)) > 1:
        return []
    for match in _RULE.finditer(text):
        condition = match.group("condition").lower()
        rest = _SUBJECT.sub("", match.group("rest").strip())
        if not rest:
            continue
        if match.group("only") is not None:
            holds = condition in ("before", "until")
        else:
            holds = condition in ("once", "after", "if", "when")
        found.append(rest if holds else f"not {rest}")
    return found


_ID_DASH = re.compile(r"(?<=[A-Za-z])-(?=\d)")
"""A dash between an id's letters and digits: "#W-3178606" names #W3178606."""
_CENTS = re.compile(r"^[$€£]?(\d+\.\d\d)$")


def _rounded(wording: str) -> list[str]:
    """An amount with cents rounded to one decimal ("292.7" for 292.69): the same claim."""
    match = _CENTS.match(wording.strip())
    if match is None:
        return []
    rounded = f"{Decimal(match.group(1)).quantize(Decimal('0.1'), ROUND_HALF_UP)}"
    return [rounded] if Decimal(rounded) != Decimal(match.group(1)) else []


_VALUES = ("#",)
"""The form of a piece that is nothing but values and names (`castbench._grading.ties.form`)."""


def _stated(mention: Mention, replies: Sequence[str]) -> bool:
    return any(not missing_outputs([form], replies) for wording in mention.any_of for form in _forms(wording))


class _Replies:
    """The agent's replies cut into segments (`castbench._grading.ties`), against the records its
    tool results showed."""

    def __init__(self, replies: Sequence[str], results: Sequence[str]) -> None:
        self.records = Records.of(results)
        self.cut = [segments(_ID_DASH.sub("", reply), self.records) for reply in replies]
        self.implied = Said([fact for reply in replies for fact in _implied(reply)])
        """What the rules the replies give as reasons say of the record (`_implied`)."""
        self._forms: dict[str, tuple[str, ...]] = {}
        self._said: dict[str, Said] = {}
        self._holding: dict[str, list[Segment]] | None = None

    def said(self, text: str) -> Said:
        """`Said([text])`, built once per text: every claim's every wording is looked up in every
        segment, and building the look-up each time was most of the claims rule's cost."""
        said = self._said.get(text)
        if said is None:
            said = self._said[text] = Said([text])
        return said

    def form(self, text: str) -> tuple[str, ...]:
        if text not in self._forms:
            self._forms[text] = form(text, self.records)
        return self._forms[text]

    def _series(self, unit: str, units: Sequence[str], *, items: bool = False) -> list[str]:
        """The other units among `units` (a reply's sentences, a sentence's pieces) parallel to
        `unit`: of its form (`castbench._grading.ties.form`); `items`: each unit read from its last
        colon on (the first piece of "Your bills: B1: $37.31; B2: $41.06" is an item too)."""

        def shape(text: str) -> tuple[str, ...]:
            return self.form(text.rsplit(": ", 1)[-1] if items else text)

        own = shape(unit)
        return [other for other in units if other != unit and shape(other) == own]

    def _run(self, segment: Segment, reply: Sequence[Segment]) -> list[str]:
        """The sentences or lines next to `segment` in its reply (and next to those) that are
        parallel to it: a series is written in one go, not across the reply's parts (a list of
        what was asked for, then a summary of the account)."""
        shape = self.form(segment.text)
        at = next(position for position, other in enumerate(reply) if other is segment)
        run: list[str] = []
        for step in (-1, 1):
            position = at + step
            while 0 <= position < len(reply) and self.form(reply[position].text) == shape:
                run.append(reply[position].text)
                position += step
        return run

    def _in_dump(self, piece: str, cut: Sequence[Piece], segment: Segment, reply: Sequence[Segment]) -> bool:
        """Is `piece` nothing but values ("basic_5: 25.0"), one of three or more such pieces of its
        sentence, or its sentence one of three or more such sentences or lines in a row? A dump of
        every value seen, each beside its record's name, states nothing as a reason."""
        if self.form(piece) != _VALUES:
            return False
        if len(self._series(piece, [other.text for other in cut])) >= 2:
            return True
        return self.form(segment.text) == _VALUES and len(self._run(segment, reply)) >= 2

    def states(self, mention: Mention) -> bool:
        """Does a reply state `mention` (a reason), in any of its wordings and their negation
        forms, as an assertion (not inside a condition: "only possible before it is delivered"
        states no reason, as it makes no claim), other than as a bare item of a list of values or
        an item of a series of values (`_in_dump`: "basic_5: 25.0" among thirty such lines states
        no limit of $25.00)?"""
        forms = [form for wording in mention.any_of for form in _forms(wording)]
        if any(self.implied.says(form) for form in forms):
            return True  # a rule given as the reason ("only possible once it is delivered")
        return any(
            self.said(piece.text).says(form, conditional=True)
            and not bare(segment, piece, cut, form)
            and not self._in_dump(piece.text, cut, segment, reply)
            for reply in self.cut
            for segment in reply
            for cut in [pieces(segment, self.records)]
            for piece in cut
            for form in forms
        )

    def asserts(self, wording: str) -> bool:
        """Does a segment assert `wording` (not negated, not as a condition) of no record that
        holds it: a bare value, or one said of a record that contradicts it?"""
        if self.implied.says(wording):
            return True  # a rule given as the reason says it of the record the refusal is about
        for said in [*_forms(wording), *_rounded(wording)]:
            words = output_words(said)
            candidates = self._segments_holding(words[0]) if words else self._segments()
            if any(
                self.said(segment.text).says(said, conditional=True) and not tied(said, segment, self.records)
                for segment in candidates
            ):
                return True
        return False

    def _segments(self) -> list[Segment]:
        return [segment for reply in self.cut for segment in reply]

    def _segments_holding(self, word: str) -> list[Segment]:
        """The segments in which `word` stands as a token, in order: the only ones where a wording
        that starts with it can be said (every claim is looked up in every reply, and most
        segments hold none of a claim's words)."""
        if self._holding is None:
            self._holding = {}
            for segment in self._segments():
                for held in self.said(segment.text).words():
                    self._holding.setdefault(held, []).append(segment)
        return self._holding.get(word, [])

    def answers(self, rival: Rival) -> bool:
        """Is `rival.output` given as an answer somewhere: in a sentence whose piece stating it
        names no other candidate, where every candidate the sentence names is said of its own
        record (by more than its name), which is not a line of a list of candidates, and which
        (and whose piece) is not parallel to a statement of another candidate (a series: "B1:
        $37.31. B3: $38.51." says each bill's amount, not which one is owed)?"""
        return any(self._answers_in(rival, segment, reply) for reply in self.cut for segment in reply)

    def _candidate(self, rival: Rival, text: str) -> bool:
        return any(self.said(text).says(other) for other in rival.others)

    def _answers_in(self, rival: Rival, segment: Segment, reply: list[Segment]) -> bool:
        if not self.said(segment.text).says(rival.output):
            return False
        cut = [piece.text for piece in pieces(segment, self.records)]
        for piece in cut:
            if self.said(piece).says(rival.output) and (
                self._candidate(rival, piece)
                or any(self._candidate(rival, other) for other in self._series(piece, cut, items=True))
            ):
                return False
        if any(self._candidate(rival, other) for other in self._run(segment, reply)):
            return False
        if not all(self._tied_candidate(other, segment) for other in rival.others):
            return False
        return not segment.listed or all(
            self._tied_candidate(other, sibling)
            for sibling in reply
            if sibling.listed and sibling.line != segment.line
            for other in rival.others
        )

    def _tied_candidate(self, other: str, segment: Segment) -> bool:
        return not self.said(segment.text).says(other) or tied(other, segment, self.records, itself=False)


def claimed(spec: EarnedSpec, replies: Sequence[str], results: Sequence[str] = ()) -> list[str]:
    """The false claims `replies` make, each as the first of its wordings they assert of no
    record that holds it (`results`: the tool results the agent saw, `castbench._grading.ties`)."""
    return _claimed(spec, _Replies(replies, results))


def _claimed(spec: EarnedSpec, judged: _Replies) -> list[str]:
    return [
        wording
        for claim in spec.false_claims
        if (wording := next((w for w in claim.any_of if judged.asserts(w)), None)) is not None
    ]


def offers(spec: EarnedSpec, question: str, results: Sequence[str] = ()) -> bool:
    """Does `question` put the task's change to the user: every offer mention, and no rival? A
    mention or rival that is the id of a record the agent saw (`results`, its tool results) is
    named by the id or by any description unique among the records of its kind it saw ("your
    order with the Hiking Boot", "your reservation from SFO to SLC on May 20th")."""
    said = Said([question])
    seen = SeenRecords(results) if results else None
    return all(
        _stated(mention, [question]) or _described(mention.any_of, question, seen) for mention in spec.offer
    ) and not any(said.says(rival) or _described([rival], question, seen) for rival in spec.offer_rivals)


def _described(wordings: Sequence[str], question: str, seen: SeenRecords | None) -> bool:
    """Is one of `wordings`, the id of a record the agent saw, described in `question`?"""
    return seen is not None and any(
        wording.lower() in seen.by_id and seen.identified(wording, [question]) for wording in wordings
    )


def _amid_rivals(rival: Rival, judged: _Replies, replies: Sequence[str]) -> bool:
    """Stated, but never as an answer (unstated outputs are reported apart)."""
    return not missing_outputs([rival.output], replies) and not judged.answers(rival)


def _looked_up(lookup: Lookup, calls: Sequence[tuple[str, dict[str, Any]]]) -> bool:
    return any(matches(required, name, arguments) for required in lookup.any_of for name, arguments in calls)


_REQUESTS = re.compile(
    r"\b(please confirm|confirm (yes|whether|if|that)|let me know (if|whether)|yes or no|yes/no"
    r"|reply (with )?[\"'“]?yes)\b",
    re.IGNORECASE,
)
"""A request for the user's go-ahead that is not written as a question ("Please confirm (yes/no)
if you'd like me to proceed.", "Let me know if you'd like me to go ahead.")."""


def _offer_questions(replies: Sequence[str]) -> list[str]:
    """Each question to the user (or request for their go-ahead); one that asks for the go-ahead
    ("Shall I proceed?") with the agent's message before it: the change may be described in one
    message and put in the next."""
    return [
        f"{replies[position - 1]}\n{reply}"
        if position and asks_confirmation(reply) and not asks_anything_else(reply)
        else reply
        for position, reply in enumerate(replies)
        if "?" in reply or _REQUESTS.search(reply)
    ]


def seen_records(conversation: Sequence[Event]) -> list[str]:
    """The tool results the agent saw (its successful calls'): what its statements are judged
    against, by the claims rule and by a reply judge alike."""
    return [event.content for event in conversation if isinstance(event, ToolResultTurn) and not event.error]


def check_earned(spec: EarnedSpec, conversation: Sequence[Event]) -> EarnedCheck:
    """What `conversation` (a trial's events, in order) lacks to earn the outcome `spec` guards."""
    calls = executed_calls(conversation)
    replies = [
        event.action.text
        for event in conversation
        if isinstance(event, AgentTurn) and isinstance(event.action, ReplyAction)
    ]
    results = seen_records(conversation)
    judged = _Replies(replies, results)
    offered = not spec.offer or any(offers(spec, question, results) for question in _offer_questions(replies))
    return EarnedCheck(
        missing_lookups=[
            lookup.any_of[0].canonical() for lookup in spec.lookups if not _looked_up(lookup, calls)
        ],
        missing_reasons=[reason.any_of[0] for reason in spec.reasons if not judged.states(reason)],
        missing_offer=[] if offered else [mention.any_of[0] for mention in spec.offer],
        false_claims=_claimed(spec, judged),
        amid_rivals=[rival.output for rival in spec.rivals if _amid_rivals(rival, judged, replies)],
    )
