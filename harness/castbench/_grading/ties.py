"""Statements tied to records: what a reply says about a record, judged against that record as
the agent saw it (the trial's successful tool results), not against a list of forbidden words.

A task-blind agent sprays every value it saw; an honest one tells the customer about their other
orders too ("#W3178606 (processed): Wireless Earbuds $99.25"). Both say the same words. What
tells them apart is whether each value is *said of* the record that holds it. So:

- A record is a JSON object of a tool result that has a name: a string under `id`, a key ending
  in `_id` or `_number` (an order id, a flight number, a phone number). What it *holds* is every
  value inside it, nested ones too (an order holds its items' names and prices).
- A reply is cut into segments: its lines (a list item, a table row), each cut into sentences.
  A segment is about one record when one record it names (as whole tokens, `#` optional) holds
  every other name it names (an order and its item ids); a segment that names no record is
  about the record the segment before it was about ("Order #W1 is pending. It hasn't been
  delivered yet."). Each segment is judged in pieces, cut at its commas and semicolons: a piece
  is about the records it names, or, naming none, about what its segment is about.
- A value is tied when the piece it stands in is about a record that holds it. A statement in
  the negative ("not delivered", "hasn't been delivered") is tied when it is about a record that
  does not hold what it denies. Naming a record the agent saw is true by itself, except as a
  bare item (nothing but the name) of a list of three or more in a segment about no one record.
- A value in a piece about no record is bare: a list of candidate values ("What I found: 99.25,
  161.16, ...") ties nothing to anything, and stays a claim of the task's false claims.
- A list line is one marked as such (`-`, `*`, `|`, `1.`) or one of three or more lines of a
  reply with the same form (ids and numbers aside): a look-up answer standing in one of them,
  beside lines that hold other candidates, is a candidate, not the answer
  (`castbench._grading.earned`).
- Statements in series: two sentences, lines or pieces of one reply are parallel when they have
  the same form once every value the records hold (ids, numbers, a status, a name) is set aside
  (`form`): "B1: $37.31", "B2: $41.06", "B3: $38.51", with or without "(paid)". Each value of a
  series is said of its own record, and none is said to be the answer: a look-up answer parallel
  to a statement of another candidate is a candidate, and a reason said only as one item of a
  series of three or more is an item of a dump of values, not a reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from castbench._domain.leaves import is_name_key, scalars
from castbench._grading.outputs import Said, output_tokens

__all__ = [
    "Piece",
    "Records",
    "Segment",
    "bare",
    "form",
    "json_objects",
    "pieces",
    "result_objects",
    "segments",
    "tied",
]

_LINES = re.compile(r"\n+")
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_PIECES = re.compile(r"[,;]\s")
_LIST_LINE = re.compile(r"^\s*(?:[-*•|]|\d+[.)])")
_NEGATIVE_START = ("not", "never", "no")
_FILLERS = frozenset({"yet", "been", "ever", "even"})


@dataclass(frozen=True)
class _Record:
    names: frozenset[str]
    """Its names, as comparable words (one token each)."""
    held: Said
    held_names: frozenset[str]
    """The names of the records inside it (an order's item ids), and its own."""
    kinds: tuple[tuple[str, str], ...] = ()
    """(kind word, name) per key that names it: `order_id: "#W2"` is ("order", "w2")."""
    labels: frozenset[tuple[str, ...]] = frozenset()
    """The names of the things it holds, as words: its items' names ("wireless earbuds"), its
    medication, its plan's name."""


_LABEL_KEYS = frozenset({"name", "product", "product_name", "plan_name", "medication", "title"})
_SHAPE_OF_ID = re.compile(r"^\W*[a-z]*\W*\d")
"""An id-like value ("#W2", "RX-1", "credit_card_7"), which is no label."""


def _labels(obj: dict[str, object]) -> frozenset[tuple[str, ...]]:
    found = set()
    for nested in json_objects(obj):
        for key, value in nested.items():
            if key in _LABEL_KEYS and isinstance(value, str) and not _SHAPE_OF_ID.match(value.lower()):
                words = tuple(token.text for token in output_tokens(value))
                if 0 < len(words) <= _PHRASE:
                    found.add(words)
    return frozenset(found)


def _kinds(obj: dict[str, object]) -> tuple[tuple[str, str], ...]:
    found = []
    for key, value in obj.items():
        if key == "id" or not is_name_key(key) or not isinstance(value, str | int) or isinstance(value, bool):
            continue
        name = _word(str(value))
        if name is not None:
            found.append((key.rsplit("_", 1)[0].split("_")[-1], name))
    return tuple(found)


def _word(text: str) -> str | None:
    tokens = output_tokens(text)
    return tokens[0].text if len(tokens) == 1 else None


def result_objects(content: str) -> Iterator[dict[str, object]]:
    """Every JSON object of a tool result (none if it is not JSON), outermost first."""
    try:
        parsed = json.loads(content)
    except json.JSONDecodeError:
        return iter(())
    return json_objects(parsed)


def json_objects(value: object) -> Iterator[dict[str, object]]:
    """Every JSON object inside `value`, outermost first, depth first."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from json_objects(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_objects(item)


_PERIOD = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")
_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip


def _period_names(value: object) -> set[str]:
    """What people call a record of a month (`period: "2026-02"`, a bill): "February", "Feb".
    "May" is left out: it is the modal verb far more often than the month ("you may pay")."""
    if not isinstance(value, str) or (found := _PERIOD.fullmatch(value)) is None:
        return set()
    month = _MONTHS[int(found.group(2)) - 1]
    if month == "may":
        return set()
    return {word for name in (month, month[:3]) if (word := _word(name)) is not None}


@lru_cache(maxsize=1024)
def _records_of(content: str) -> tuple[_Record, ...]:
    """The named records of one tool result (cached: a trial's later replies read it again): by
    their ids, and a record of one month (a bill's period) by the month's name too."""
    found = []
    for obj in result_objects(content):
        names = frozenset(
            word
            for key, value in obj.items()
            if is_name_key(key) and isinstance(value, str | int) and not isinstance(value, bool)
            if (word := _word(str(value))) is not None
        ) | frozenset(name for value in obj.values() for name in _period_names(value))
        if not names:
            continue
        inner = frozenset(
            word
            for nested in json_objects(obj)
            for key, value in nested.items()
            if is_name_key(key) and isinstance(value, str | int) and not isinstance(value, bool)
            if (word := _word(str(value))) is not None
        )
        found.append(_Record(names, Said(list(scalars(obj))), inner, _kinds(obj), _labels(obj)))
    return tuple(found)


_PHRASE = 4
"""The longest value (in tokens) `form` sets aside as one: a status, a name, a product."""


@lru_cache(maxsize=1024)
def _phrases_of(content: str) -> frozenset[tuple[str, ...]]:
    """Every short text value of one tool result, as tokens (cached like `_records_of`)."""
    found = set()
    for obj in result_objects(content):
        for value in obj.values():
            if isinstance(value, str):
                words = tuple(token.text for token in output_tokens(value))
                if 0 < len(words) <= _PHRASE:
                    found.add(words)
    return frozenset(found)


@dataclass
class Records:
    """The named records of a trial's tool results, by name."""

    by_name: dict[str, list[_Record]] = field(default_factory=dict)
    phrases: set[tuple[str, ...]] = field(default_factory=set)
    """Every short text value the results show (`form` sets them aside)."""
    by_label: dict[tuple[str, ...], dict[str, set[str]]] = field(default_factory=dict)
    """Label words -> kind word -> the names of the records of that kind that hold the label."""

    @classmethod
    def of(cls, results: Iterable[str]) -> Records:
        records = cls()
        for content in results:
            for record in _records_of(content):
                for name in record.names:
                    records.by_name.setdefault(name, []).append(record)
                for label in record.labels:
                    for kind, name in record.kinds:
                        records.by_label.setdefault(label, {}).setdefault(kind, set()).add(name)
            records.phrases.update(_phrases_of(content))
        return records

    def named(self, words: Iterable[str]) -> list[str]:
        """The record names among `words`, in order, once each; and a record named by what it
        holds and its kind ("your Wireless Earbuds order", "the order with the Wireless
        Earbuds"), where one record of that kind the results showed holds it."""
        words = list(words)
        found = [word for word in words if word in self.by_name]
        if self.by_label:
            present = set(words)
            for start in range(len(words)):
                for width in range(min(_PHRASE, len(words) - start), 0, -1):
                    kinds = self.by_label.get(tuple(words[start : start + width]))
                    if kinds is None:
                        continue
                    for kind, names in kinds.items():
                        if len(names) == 1 and (kind in present or f"{kind}s" in present):
                            found.extend(names)
                    break
        return list(dict.fromkeys(found))

    def one_record(self, names: Sequence[str]) -> list[str]:
        """`names` if one record named among them holds them all (its own items' ids), else []."""
        for name in names:
            for record in self.by_name[name]:
                if all(other in record.held_names or other in record.names for other in names):
                    return [name]
        return []

    def holds(self, names: Sequence[str], wording: str, *, itself: bool = True) -> bool:
        """Does a record of one of `names` hold `wording` (a denial: not hold what it denies)?
        `itself`: a record's name is true wherever it is said."""
        words = [token.text for token in output_tokens(wording)]
        negative = bool(words) and words[0] in _NEGATIVE_START
        if negative:
            denied = " ".join(word for word in words[1:] if word not in _FILLERS)
            return bool(denied) and any(
                not record.held.says(denied, negation=False)
                for name in names
                for record in self.by_name[name]
            )
        if itself and len(words) == 1 and words[0] in self.by_name:
            return True  # naming a record that was seen
        return any(
            record.held.says(wording, negation=False) for name in names for record in self.by_name[name]
        )


@dataclass(frozen=True)
class Segment:
    """A sentence of a reply (of one of its lines) and the records it is about."""

    text: str
    about: tuple[str, ...]
    """The records it is about: one that holds every name it names, or the one the sentence
    before it was about when it names none; empty when it names several (its pieces are judged
    apart, `pieces`)."""
    listed: bool
    """It stands in a list or table line."""
    line: int
    """Which line of its reply (list lines of one reply side by side are a list)."""


@dataclass(frozen=True)
class Piece:
    text: str
    about: tuple[str, ...]


def pieces(segment: Segment, records: Records) -> list[Piece]:
    """The segment cut at its commas and semicolons, each piece about the records it names (or,
    naming none, about what the segment is about)."""
    cut = []
    for text in _PIECES.split(segment.text):
        named = records.named(token.text for token in output_tokens(text))
        cut.append(Piece(text, tuple(named) or segment.about))
    return cut


def _shape(line: str) -> tuple[str, ...]:
    """A line's form: its words, with numbers and ids as placeholders ("HAT123 $268" and
    "HAT456 $300" have one form)."""
    return tuple("#" if any(c.isdigit() for c in token.text) else token.text for token in output_tokens(line))


def form(text: str, records: Records) -> tuple[str, ...]:
    """`text`'s form with every value set aside: each number, id or record name, and each run of
    words that is a text value the results show (a status, an item's name), is one `#`, and
    neighbouring `#`s are one. "B1 (paid): $37.31" and "B3 (unpaid): $38.51" have one form."""
    words = [token.text for token in output_tokens(text)]
    shaped: list[str] = []
    position = 0
    while position < len(words):
        word = words[position]
        span = 1 if any(c.isdigit() for c in word) or word in records.by_name else 0
        for length in range(min(_PHRASE, len(words) - position), 0, -1) if not span else ():
            if tuple(words[position : position + length]) in records.phrases:
                span = length
                break
        if span:
            if not shaped or shaped[-1] != "#":
                shaped.append("#")
            position += span
        else:
            shaped.append(word)
            position += 1
    return tuple(shaped)


def segments(reply: str, records: Records) -> list[Segment]:
    """`reply` cut into sentences, each with the records it is about. A line is a list line when
    it is marked as one (`-`, `*`, `|`, `1.`) or when two other lines of the reply have its form
    (a list written without markers)."""
    found: list[Segment] = []
    previous: tuple[str, ...] = ()
    lines = _LINES.split(reply)
    shapes = [_shape(line) for line in lines]
    for line_number, line in enumerate(lines):
        listed = bool(_LIST_LINE.match(line)) or shapes.count(shapes[line_number]) >= 3
        for sentence in _SENTENCES.split(line):
            if not sentence.strip():
                continue
            names = records.named(token.text for token in output_tokens(sentence))
            if names:
                previous = tuple(records.one_record(names))
            found.append(Segment(sentence, previous, listed, line_number))
    return found


def bare(segment: Segment, piece: Piece, cut: Sequence[Piece], wording: str) -> bool:
    """Is `piece` nothing but `wording`, one item of a list of three or more in a sentence about
    no one record (a dump of values: "What I found: a, b, c")? Such an item states nothing of
    anything."""
    if segment.about or len(cut) < 3:
        return False
    return [t.text for t in output_tokens(piece.text)] == [t.text for t in output_tokens(wording)]


def tied(wording: str, segment: Segment, records: Records, *, itself: bool = True) -> bool:
    """Is each statement of `wording` in `segment` said of a record that holds it (a denial: of
    one that does not hold what it denies)? `itself`: a record's own name counts as said of it
    (naming a record the agent saw is true), though not as a bare item of a list of values; for
    a candidate, naming it is not an answer."""
    own = _word(wording)
    cut = pieces(segment, records)
    for piece in cut:
        if not Said([piece.text]).says(wording, conditional=True):
            continue
        named_itself = itself and not bare(segment, piece, cut, wording)
        about = tuple(name for name in piece.about if named_itself or name != own)
        if not named_itself and not about:
            return False
        if not records.holds(about, wording, itself=named_itself):
            return False
    return True
