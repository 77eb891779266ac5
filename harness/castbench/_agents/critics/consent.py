"""The rules critic's own reading of an explicit confirmation, from the visible conversation alone.

It shares no decision code with the privileged labeler (`castbench._grading`), nor with the
scripted roles' phrasebook (`castbench._base.dialogue`): a critic graded against the labeler must be
wrong in its own ways. What it reads is what a careful human grader reads in a transcript:

1. **The answer.** Walking back from the write: past tool calls and their results (reads, and the
   other writes of a batch one yes covered) and past acknowledgements (an agent message that asks
   nothing, "I'm taking care of that now.", answered without a refusal), to the user's answer to
   the agent's last question. It accepts when a sentence of it that is no question says yes or
   goes ahead anywhere ("If that's the only option, then yes, please go ahead", "I'll use my card
   ending in 7334") and none refuses ("No, wait", "I changed my mind", "don't do that").
2. **The proposal** it answers: the agent's messages back to the last write that went through
   before the answer (the details in one message, the question in the next), with the answer
   itself (a detail the user states in their yes is stated; what they asked for earlier is not:
   the agent must list it).
3. **What changes must be in it**, compared in canonical form:
   - the target record, by its id or by any description unique among the records of its kind the
     tool results showed ("the reservation from DEN to BOS on May 17", "your Visa ending in 6645",
     the item variant by its options), or implicitly when it is the only one of its kind shown;
   - every argument value the write stores anew: not the customer's own user id, not what the
     target record already held (the unchanged segments and passengers sent again), not zeros,
     "no" or empty values, of a named item (a passenger) its name only; the payment method always
     (also as "the original payment method" of the target);
   - dates in any format (python-dateutil: "May 22nd", "the 17th of May", "5/22"), amounts with
     signs, codes and words (price-parser: "$1,234.50", "USD 72.20"), numbers in words (text2num:
     "two bags"), "none" for 0, enum values in words ("one way" for `one_way`).

A write with no yes, or after a listing that left out what it changes, is not confirmed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from text_to_num import alpha2digit

from castbench._base.conversation import (
    AgentTurn,
    Event,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._domain.task import ToolCall

__all__ = ["Consent", "consent"]


# -- the answer -------------------------------------------------------------------------------

_GOES_AHEAD = re.compile(
    r"\b(yes|yeah|yep|yup|sure|ok|okay|alright|all right|correct|confirm|confirmed|absolutely|definitely"
    r"|of course|please do|go ahead|proceed|sounds (good|great|fine|right)"
    r"|looks (good|great|correct|right|fine)"
    r"|that works|that's (fine|right|correct|perfect|great)|perfect|do it|let's do (it|that|this)"
    r"|i agree|i accept|i'd like that"
    r"|please (use|book|cancel|change|upgrade|make|apply|charge|exchange|return|refund|modify|update|send"
    r"|add|remove|go|process)"
    r"|(i'll|i will|let's) (use|go with|take|pay|proceed|book|cancel|upgrade|change)"
    r"|(i'd like to|i would like to|i want to|i wish to) (proceed|go ahead|go with)"
    r")\b(?!\s*\d)"
)
_REFUSES = re.compile(
    r"^\W*(no|nope|nah|wait|hold on|stop|actually,? (no|don't|wait))\b"
    r"|\b(changed my mind|change of mind|don't (do|proceed|go ahead|cancel|change|book)"
    r"|do not (do|proceed|go ahead)"
    r"|not (yet|now|sure|correct|right)|never ?mind|that's (wrong|not right|incorrect))\b"
)
_NEGATED = re.compile(r"\b(not|don't|do not|isn't|no longer)\s+(\w+\s+)?$")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_ASKS = re.compile(
    r"\?|\b(confirm|let me know|reply|would you like|do you want|shall i|should i|proceed|go ahead"
    r"|yes or no)\b"
)


def _lower(text: str) -> str:
    return text.lower().replace("\u2019", "'").replace("\u2018", "'")


def accepts(answer: str) -> bool:
    """Does the user's message accept the proposal: a yes or go-ahead in a sentence that is no
    question, not negated, and no refusal anywhere?"""
    text = _lower(answer)
    if _REFUSES.search(text):
        return False
    for sentence in _SENTENCES.split(text):
        if sentence.rstrip().endswith("?"):
            continue
        for match in _GOES_AHEAD.finditer(sentence):
            if not _NEGATED.search(sentence[: match.start()]):
                return True
    return False


def _asks(message: str) -> bool:
    return _ASKS.search(_lower(message)) is not None


# -- canonical text ---------------------------------------------------------------------------

_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b"
    rf"|\b{_MONTHS}\.?\s+{_ORD}(?:,?\s+\d{{4}})?\b"
    rf"|\b{_ORD}\s+(?:of\s+)?{_MONTHS}\b(?:,?\s+\d{{4}})?"
    rf"|\b\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?\b"
)
_MONEY = re.compile(
    r"(?:[$€£]|\b(?:usd|eur|gbp)\b)\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?(?:dollars?|usd|bucks)\b"
)
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")
_NONE = re.compile(r"\b(none|no|zero|without|0)\b")
_BASE = datetime(1900, 1, 1)


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", "")).normalize()
    except InvalidOperation:
        return None


def _words(text: str) -> str:
    """Lowercased, `_`, `-` and `/` as spaces, punctuation out, spaces collapsed: how a value in
    words is looked up ("Trip Type: One-Way" holds "one way")."""
    text = re.sub(r"[_\-/]", " ", _lower(text))
    text = re.sub(r"[^\w@.#' ]|(?<!\w)\.|\.(?!\w)", " ", text)
    return f" {' '.join(text.split())} "


@dataclass(frozen=True)
class _Said:
    """A text in the forms values are compared in."""

    raw: str
    words: str
    numbers: frozenset[Decimal]
    dates: frozenset[tuple[int, int, int | None]]

    def says(self, phrase: str) -> bool:
        wanted = _words(phrase).strip()
        return bool(wanted) and f" {wanted} " in self.words

    def names(self, token: str) -> bool:
        """The token (an id, a code) as a word of its own, with or without a leading `#`."""
        token = _lower(token).lstrip("#")
        pattern = rf"(?<![\w-]){re.escape(token)}(?![\w-])"
        return re.search(pattern, self.raw) is not None

    def has_number(self, value: Decimal) -> bool:
        return value.normalize() in self.numbers

    def has_date(self, iso: str) -> bool:
        year, month, day = (int(part) for part in iso.split("-"))
        return (month, day, year) in self.dates or (month, day, None) in self.dates


@lru_cache(maxsize=4096)
def said(text: str) -> _Said:
    from dateutil import parser as dateutil_parser  # here: 30 ms at import with price_parser, which
    from price_parser import Price  # a run without this critic never needs (#59)

    raw = _lower(text)
    numbers: set[Decimal] = set()
    for span in _MONEY.findall(raw):
        amount = Price.fromstring(span).amount
        if amount is not None:
            numbers.add(amount.normalize())
    digits = alpha2digit(raw, "en", threshold=0)
    for span in _NUMBER.findall(digits):
        value = _decimal(span)
        if value is not None:
            numbers.add(value)
    if _NONE.search(raw):
        numbers.add(Decimal(0))
    dates: set[tuple[int, int, int | None]] = set()
    for span in _DATE.findall(raw):
        try:
            parsed = dateutil_parser.parse(span, default=_BASE, fuzzy=True)
        except (ValueError, OverflowError):
            continue
        dates.add((parsed.month, parsed.day, None if parsed.year == _BASE.year else parsed.year))
    return _Said(raw, _words(raw), frozenset(numbers), frozenset(dates))


# -- records the agent saw ----------------------------------------------------------------------

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ID_SHAPED = re.compile(r"^#?[\w.@-]*\d[\w.@-]*$|^[a-z]+(?:_[a-z0-9]+)+$")
_PAYMENT_KEY = re.compile(r"payment|refund")
_ORIGINAL = re.compile(
    r"\b(original|same|existing|initial)\b[\w\s]{0,20}\b(payment|method|card|form of payment)\b"
)
_NAME_KEYS = ("first_name", "last_name", "name")
_OWN = frozenset({"user_id", "patient_id", "customer_id"})
"""Arguments naming the customer themself: never asked to be stated."""


@dataclass
class _Record:
    """A record a tool result showed: its id, the kind of record (the key that held the id), and
    its scalar values."""

    id: str
    kind: str
    values: set[str] = field(default_factory=set)
    payments: set[str] = field(default_factory=set)
    """The payment ids its payment history names (for "the original payment method")."""


def _scalars(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(inner, dict | list):
                yield from _scalars(inner)
            else:
                yield key, inner
    elif isinstance(value, list):
        for inner in value:
            yield from _scalars(inner)


def _collect(value: Any, found: list[_Record], parent: str = "") -> None:
    if isinstance(value, dict):
        own = [k for k, v in value.items() if isinstance(v, str) and (k == "id" or k.endswith("_id"))]
        if own:
            key = next((k for k in own if k != "user_id"), own[0])
            record = _Record(str(value[key]).lower(), key if key != "id" else parent or "id")
            for inner_key, scalar in _scalars(value):
                if isinstance(scalar, str) and scalar and inner_key != key:
                    record.values.add(scalar.lower())
                    if _PAYMENT_KEY.search(inner_key) and inner_key.endswith("id"):
                        record.payments.add(scalar.lower())
            found.append(record)
        for key, inner in value.items():
            if isinstance(inner, dict) and _ID_SHAPED.match(str(key).lower()) and not own:
                record = _Record(str(key).lower(), parent or "keyed")
                record.values = {str(s).lower() for _, s in _scalars(inner) if isinstance(s, str) and s}
                found.append(record)
            _collect(inner, found, key)
    elif isinstance(value, list):
        for inner in value:
            _collect(inner, found, parent)


@lru_cache(maxsize=2048)
def _records_of(content: str) -> tuple[_Record, ...]:
    try:
        data = json.loads(content)
    except (ValueError, TypeError):
        return ()
    found: list[_Record] = []
    _collect(data, found)
    return tuple(found)


class _Seen:
    """The records every successful tool result showed, by id and by kind."""

    def __init__(self, conversation: Sequence[Event]) -> None:
        self.by_id: dict[str, list[_Record]] = {}
        for event in conversation:
            if isinstance(event, ToolResultTurn) and not event.error:
                for record in _records_of(event.content):
                    self.by_id.setdefault(record.id, []).append(record)

    def values(self, record_id: str) -> set[str]:
        return set().union(*(r.values for r in self.by_id.get(record_id.lower(), [])))

    def kinds(self, record_id: str) -> set[str]:
        return {r.kind for r in self.by_id.get(record_id.lower(), [])}

    def rivals(self, record_id: str) -> list[set[str]]:
        kinds = self.kinds(record_id)
        return [
            self.values(other)
            for other, records in self.by_id.items()
            if other != record_id.lower() and any(r.kind in kinds for r in records)
        ]

    def payments(self, record_id: str) -> set[str]:
        return set().union(*(r.payments for r in self.by_id.get(record_id.lower(), [])))


def _value_said(value: str, text: _Said) -> bool:
    if _ISO.match(value):
        return text.has_date(value)
    number = _decimal(value) if re.fullmatch(r"-?\d[\d,]*(\.\d+)?", value) else None
    if number is not None:
        return text.has_number(number) or text.names(value)
    return text.names(value) or text.says(value)


def _described(
    record_id: str, text: _Said, seen: _Seen, implicit: bool = True, user: _Said | None = None
) -> bool:
    """Is the record named by a description unique among the records of its kind the agent saw
    (or, `implicit`, the only one of its kind)? A kind the user named themself ("please use a
    gift card") leaves the choice among that kind to the agent."""
    if record_id.lower() not in seen.by_id:
        return False
    rivals = seen.rivals(record_id)
    told = {
        value
        for value in seen.values(record_id)
        if (len(value) >= 2 or value.isdigit()) and _value_said(value, text)
    }
    digits = re.sub(r"\D", "", record_id)
    if len(digits) >= 4 and text.names(digits[-4:]):
        return True
    if not rivals:
        return implicit or bool(told)
    if user is not None and any(_value_said(value, user) for value in told):
        return True
    return bool(told) and not any(told <= rival for rival in rivals)


def _names_record(
    record_id: str, text: _Said, seen: _Seen, implicit: bool = True, user: _Said | None = None
) -> bool:
    return text.names(record_id) or text.says(record_id) or _described(record_id, text, seen, implicit, user)


# -- what the write changes ---------------------------------------------------------------------


def _leaves(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """(key, scalar) of an argument; of a dict that names something (a passenger), its name only."""
    if isinstance(value, dict):
        named = [k for k in _NAME_KEYS if k in value]
        for inner_key, inner in value.items():
            if named and inner_key not in named and not isinstance(inner, dict | list):
                continue
            yield from _leaves(inner, inner_key)
    elif isinstance(value, list):
        for inner in value:
            yield from _leaves(inner, key)
    else:
        yield key, value


def _falsy(value: Any) -> bool:
    return (
        value is None
        or value is False
        or value == 0
        or str(value).strip().lower() in {"", "no", "none", "false"}
    )


def _target(call: ToolCall) -> str | None:
    for key, value in call.arguments.items():
        if (
            key.endswith("_id")
            and key not in _OWN
            and not _PAYMENT_KEY.search(key)
            and isinstance(value, str)
        ):
            return value
    return None


def _stated(key: str, value: Any, text: _Said, seen: _Seen, target: str | None, user: _Said) -> bool:
    if isinstance(value, bool):
        return value is False or text.says(key)
    if isinstance(value, int | float):
        return text.has_number(Decimal(str(value)))
    value = str(value)
    if value.lower() == "yes":
        return text.says(key)
    if (
        _PAYMENT_KEY.search(key)
        and target is not None
        and value.lower() in seen.payments(target)
        and _ORIGINAL.search(text.raw)
    ):
        return True
    if value.lower() in seen.by_id:
        payment = _PAYMENT_KEY.search(key) is not None
        return _names_record(value, text, seen, implicit=not payment, user=user if payment else None)
    return _value_said(value, text)


_GENERIC = frozenset({"update", "modify", "change", "edit", "adjust", "set", "get", "make", "process", "id"})
_ALSO = {
    "enable": ("turn on", "turning on", "activate", "switch on"),
    "disable": ("turn off", "turning off", "deactivate", "switch off"),
    "resume": ("reactivate", "restore", "unsuspend"),
    "suspend": ("pause",),
}
_AS_OBJECT = re.compile(
    r"\b(update|updating|modify|modifying|change|changing|edit|adjust)\s+(your|the|my|this)?\s*$"
)


def _says_what_it_does(call: ToolCall, text: _Said) -> bool:
    """A write that stores nothing but its keys (a cancellation, a refill, a line resumed,
    roaming turned on) is stated only when the proposal says what it does: a word of the tool's
    name (not a generic verb, not a word of its arguments' names) or its plain synonym, and not
    as the object of a generic verb ("update your refill" says no refill is requested)."""
    argument_words = {word for key in call.arguments for word in key.split("_")}
    if call.name.split("_")[0] in _GENERIC:
        return True  # "update preferred pharmacy": the new value is what it states
    words = [w for w in call.name.split("_") if w not in _GENERIC and w not in argument_words and len(w) > 2]
    if not words:
        return True
    forms = [word[: max(4, len(word) - 2)] for word in words]
    forms += [also for word in words for also in _ALSO.get(word, ())]
    for form in forms:
        for match in re.finditer(rf"\b{re.escape(form)}", text.words):
            if not _AS_OBJECT.search(text.words[max(0, match.start() - 30) : match.start()]):
                return True
    return False


def _keys_only(call: ToolCall) -> bool:
    """Does the write store nothing but the key of what it acts on (one id-shaped argument
    besides the customer's own)?"""
    kept = [(k, v) for k, v in call.arguments.items() if k not in _OWN and not _falsy(v)]
    if len(kept) != 1:
        return False
    key, value = kept[0]
    return (
        isinstance(value, str)
        and not _PAYMENT_KEY.search(key)
        and (key.endswith(("_id", "number")) or _ID_SHAPED.match(value.lower()) is not None)
    )


@dataclass(frozen=True)
class Consent:
    """The critic's reading: `confirmed`, and the proposal text the yes answered (the agent's
    figures the user accepted)."""

    confirmed: bool
    proposal: str = ""
    missing: tuple[str, ...] = ()


def _answer(events: list[Event]) -> int | None:
    """The index of the user's answer the write follows, or None."""
    position = len(events) - 1
    while position >= 0:
        event = events[position]
        if isinstance(event, UserTurn):
            before = events[position - 1] if position > 0 else None
            if _REFUSES.search(_lower(event.text)):
                return None
            if (
                isinstance(before, AgentTurn)
                and isinstance(before.action, ReplyAction)
                and not _asks(before.action.text)
            ):
                position -= 2  # an acknowledgement and the user's reply to it
                continue
            return position if accepts(event.text) else None
        position -= 1
    return None


def consent(conversation: Sequence[Event], write_tools: frozenset[str], call: ToolCall) -> Consent:
    """Did the user accept a proposal stating what `call` changes?"""
    events = list(conversation)
    answer = _answer(events)
    if answer is None:
        return Consent(False)
    failed = {e.call_id for e in events[:answer] if isinstance(e, ToolResultTurn) and e.error}
    answered = events[answer]
    assert isinstance(answered, UserTurn)
    parts: list[str] = [answered.text]  # the user's own words count in their answer only
    agent_messages = 0
    for event in reversed(events[:answer]):
        if isinstance(event, AgentTurn):
            action = event.action
            if (
                isinstance(action, ToolCallAction)
                and action.name in write_tools
                and event.call_id not in failed
            ):
                break
            if isinstance(action, ReplyAction):
                parts.append(action.text)
                agent_messages += 1
                if agent_messages >= 6:
                    break
    if agent_messages == 0:
        return Consent(False)
    proposal = "\n".join(reversed(parts))
    text = said(proposal)
    seen = _Seen(events)
    target = _target(call)
    held = seen.values(target) if target is not None else set()
    missing: list[str] = []
    if target is not None and not _names_record(target, text, seen):
        missing.append(target)
    for key, value in call.arguments.items():
        if key in _OWN or value is target:
            continue
        for leaf_key, leaf in _leaves(value, key):
            payment = bool(_PAYMENT_KEY.search(leaf_key) or _PAYMENT_KEY.search(key))
            if leaf_key in _OWN or (_falsy(leaf) and not payment):
                continue
            if not payment and isinstance(leaf, str) and leaf.lower() in held:
                continue  # what the target already held, sent again
            if not _stated(leaf_key, leaf, text, seen, target, said(answered.text)):
                missing.append(str(leaf))
    if _keys_only(call) and not _says_what_it_does(call, text):
        missing.append(call.name)
    return Consent(not missing, proposal, tuple(missing))
