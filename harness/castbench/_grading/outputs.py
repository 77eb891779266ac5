"""Checks on what the agent told the user: required outputs, and claims of success.

Two rules for finding a required output in the agent's replies, chosen per run (`grading`):

- `castbench` (the default) reads both as tokens. A number is a number: currency signs,
  thousands separators and trailing zeros do not matter ("$82" = "82.00" = "82"), and it must be
  a whole token ("182.00" is not "82.00", "1Z999" is not "999"). A word matches a whole word,
  case-insensitively ("undelivered" is not "delivered"; a leading "#" of an id is optional).
  An output of several tokens must appear as that run of tokens. An occurrence does not count
  when a negation ("not", "no", "never", "cannot", a "n't" contraction) stands among the three
  tokens before it in the same clause: "was not cancelled" does not say "cancelled", while
  "No, it is cancelled" does (the comma ends the clause).
- `tau` is τ-Bench's check verbatim, for comparable figures: a plain substring of one reply after
  lowercasing it and dropping its commas ("182.00" passes for "82.00"); the τ packs' parity bench
  checks it against τ's own `calculate_reward`. On the τ packs this mode also leaves out the
  earned-outcome check castbench derives for them (`EarnedSpec.derived`), which τ does not have.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import NamedTuple

from castbench._base.defaults import GRADING_MODES, GradingMode

__all__ = [
    "GRADING_MODES",
    "GradingMode",
    "claims_success",
    "missing_outputs",
    "output_tokens",
    "output_words",
    "Said",
]


_SUCCESS = re.compile(
    r"\b(has been|have been|successfully|is now|are now|done|completed|processed|cancelled|updated"
    r"|refunded)\b"
)
_REFUSAL = re.compile(r"\b(sorry|can't|cannot|unable|not able|not allowed|does not allow)\b")

_UNITS = r"(?:[kmgt]i?b|kg|lbs?|mm|cm|km|ml|hrs?|mins?)"
"""Units a quantity may be glued to."""
_TOKEN = re.compile(
    # a clock time, 24-hour or with am/pm ("4:55 PM" is 16:55): one token, never an amount
    r"(?P<time>(?<![\w.:$€£])(?P<hour>[01]?\d|2[0-3]):(?P<minute>[0-5]\d)(?:\s?(?P<half>[ap])\.?m\.?)?(?![\w:]))"
    # a number: optional currency sign, thousands separators or plain digits, decimals; not glued
    # to a letter, a digit or a dash-joined part (an id like 1Z999 or a date like 2026-05-22),
    # but it may carry a unit ("3.08GB" is 3.08 GB)
    r"|(?P<number>(?<![\w.-])(?:[$€£]\s?)?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?="
    + _UNITS
    + r"\b|(?![\w]|[.,-]\d)))"
    # anything else that is word-like: ids, emails, dates, contractions
    r"|(?P<word>[\w#@.'-]*\w)"
)
_CLAUSE_END = re.compile(r"[.,;:!?](?=\s|$)|[\n()]")
_NEGATIONS = frozenset({"not", "no", "never", "cannot", "nor", "neither"})
_CONDITIONS = frozenset(
    {"before", "until", "till", "unless", "once", "if", "provided", "providing", "whenever"}
)
"""Words that make what follows a condition, not an assertion: "before it's processed", "only
possible if it has no refills left"."""
_LOOKBACK = 3
_CONTRACTED = {"ca": "can", "wo": "will", "sha": "shall"}
"""A "n't" contraction's stem that is not its verb ("can't" is "can not")."""


class Token(NamedTuple):
    text: str
    clause: int


def _number(text: str) -> str:
    digits = re.sub(r"[$€£,\s]", "", text)
    return format(Decimal(digits).normalize(), "f")


def _clock(match: re.Match[str]) -> str:
    hour, half = int(match.group("hour")), match.group("half")
    if half is not None and 1 <= hour <= 12:
        hour = hour % 12 + (12 if half == "p" else 0)
    return f"{hour:02d}:{match.group('minute')}"


def output_tokens(text: str) -> list[Token]:
    """`text` as comparable tokens, each with the index of the clause it stands in."""
    return list(_tokenised(text))


@lru_cache(maxsize=8192)
def _tokenised(text: str) -> tuple[Token, ...]:
    """Cached: the labeler reads the same tool results again at every later step of a trial."""
    tokens: list[Token] = []
    lowered = text.lower().replace("’", "'")
    for clause, part in enumerate(_CLAUSE_END.split(lowered)):
        for match in _TOKEN.finditer(part):
            if match.group("time") is not None:
                tokens.append(Token(_clock(match), clause))
            elif match.group("number") is not None:
                tokens.append(Token(_number(match.group("number")), clause))
            else:
                word = match.group("word").lstrip("#'.-")
                if word.endswith("n't") and len(word) > 3:  # "hasn't" is "has not"
                    stem = word[:-3]
                    tokens.extend((Token(_CONTRACTED.get(stem, stem), clause), Token("not", clause)))
                elif word:
                    tokens.append(Token(word, clause))
    return tuple(tokens)


def _negated(said: Sequence[Token], start: int, conditional: bool = False) -> bool:
    clause = said[start].clause
    before = [t.text for t in said[max(0, start - _LOOKBACK) : start] if t.clause == clause]
    if any(word in _NEGATIONS for word in before):
        return True
    if not conditional:
        return False
    position = start - 1  # a condition reaches to its clause's end: "once an order has been delivered"
    while position >= 0 and said[position].clause == clause:
        if said[position].text in _CONDITIONS:
            return True
        position -= 1
    return False


class Said:
    """Several texts as tokens, for look-ups of whole-token runs. A match stays inside one text
    and a negation inside one clause of it. Each text's tokens and index (token -> positions)
    are cached, so a look-up costs the occurrences of the output's first token."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._texts = [_indexed(text) for text in texts]

    def extended(self, texts: Iterable[str]) -> Said:
        """These texts and `texts` after them, without looking up again the ones held: the
        labeler's record of what a trial revealed grows by a few texts per action."""
        said = Said(())
        said._texts = [*self._texts, *(_indexed(text) for text in texts)]
        return said

    def words(self) -> set[str]:
        """Every token that stands in these texts."""
        return {word for _, _, positions in self._texts for word in positions}

    def says(self, output: str, *, negation: bool = True, conditional: bool = False) -> bool:
        """Whether `output` appears as a run of whole tokens (not negated, if `negation`; not in a
        clause after a condition's "before", "until", "unless", "once", if `conditional`: what a
        claim or a stated reason must not be)."""
        wanted = _words(output)
        if not wanted:
            return True
        width = len(wanted)
        return any(
            words[start : start + width] == wanted and not (negation and _negated(tokens, start, conditional))
            for tokens, words, positions in self._texts
            for start in positions.get(wanted[0], ())
        )


def output_words(text: str) -> tuple[str, ...]:
    """`text` as the words `Said.says` looks for (the tokens' texts)."""
    return _words(text)


@lru_cache(maxsize=8192)
def _words(text: str) -> tuple[str, ...]:
    return tuple(token.text for token in _tokenised(text))


@lru_cache(maxsize=8192)
def _indexed(text: str) -> tuple[tuple[Token, ...], tuple[str, ...], dict[str, list[int]]]:
    """A text's tokens, their words, and where each word stands (cached, like the tokens: the
    labeler and the attribution read the same texts again and again; a look-up compares slices
    of words, not freshly built lists)."""
    at: dict[str, list[int]] = defaultdict(list)
    for position, token in enumerate(_tokenised(text)):
        at[token.text].append(position)
    return _tokenised(text), _words(text), dict(at)


def missing_outputs(
    required: Iterable[str], replies: Iterable[str], mode: GradingMode = "castbench"
) -> list[str]:
    """The required outputs that the replies do not say, in their order."""
    replies = list(replies)
    if mode == "tau":  # τ's `calculate_reward`, verbatim: per message, lowercased, commas dropped
        texts = [reply.lower().replace(",", "") for reply in replies]
        return [output for output in required if not any(output.lower() in text for text in texts)]
    said = Said(replies)
    return [output for output in required if not said.says(output)]


def claims_success(replies: list[str]) -> bool:
    """Whether the agent's last replies say the work was done (and do not refuse)."""
    tail = " ".join(replies[-2:]).lower()
    return bool(_SUCCESS.search(tail)) and not _REFUSAL.search(tail)
