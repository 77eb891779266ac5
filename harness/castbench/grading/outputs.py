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
- `tau` is τ-Bench's check, for comparable figures: a plain substring of the replies after
  lowercasing and dropping currency signs and thousands separators ("182.00" passes for "82.00").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Literal, NamedTuple

__all__ = [
    "GRADING_MODES",
    "GradingMode",
    "claims_success",
    "missing_outputs",
    "normalize_output",
    "output_tokens",
    "said_tokens",
    "says",
]

GradingMode = Literal["castbench", "tau"]
GRADING_MODES: tuple[GradingMode, ...] = ("castbench", "tau")

_SUCCESS = re.compile(
    r"\b(has been|have been|successfully|is now|are now|done|completed|processed|cancelled|updated"
    r"|refunded)\b"
)
_REFUSAL = re.compile(r"\b(sorry|can't|cannot|unable|not able|not allowed|does not allow)\b")

_TOKEN = re.compile(
    # a number: optional currency sign, thousands separators or plain digits, decimals; not glued
    # to a letter, a digit or a dash-joined part (an id like 1Z999 or a date like 2026-05-22)
    r"(?P<number>(?<![\w.-])[$€£]?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w]|[.,-]\d))"
    # anything else that is word-like: ids, emails, dates, contractions
    r"|(?P<word>[\w#@.'-]*\w)"
)
_CLAUSE_END = re.compile(r"[.,;:!?](?=\s|$)|[\n()]")
_NEGATIONS = frozenset({"not", "no", "never", "cannot", "nor", "neither"})
_LOOKBACK = 3


class Token(NamedTuple):
    text: str
    clause: int


def _number(text: str) -> str:
    digits = re.sub(r"[$€£,\s]", "", text)
    return format(Decimal(digits).normalize(), "f")


def output_tokens(text: str) -> list[Token]:
    """`text` as comparable tokens, each with the index of the clause it stands in."""
    tokens: list[Token] = []
    lowered = text.lower().replace("’", "'")
    for clause, part in enumerate(_CLAUSE_END.split(lowered)):
        for match in _TOKEN.finditer(part):
            if match.group("number") is not None:
                tokens.append(Token(_number(match.group("number")), clause))
            else:
                word = match.group("word").lstrip("#'.-")
                if word:
                    tokens.append(Token(word, clause))
    return tokens


def _negated(said: Sequence[Token], start: int) -> bool:
    clause = said[start].clause
    before = [t.text for t in said[max(0, start - _LOOKBACK) : start] if t.clause == clause]
    return any(word in _NEGATIONS or word.endswith("n't") for word in before)


def said_tokens(texts: Iterable[str]) -> list[Token]:
    """The tokens of several texts, each text's clauses numbered apart (a clause, and so a
    negation, never runs from one text into the next)."""
    said: list[Token] = []
    for text in texts:
        offset = said[-1].clause + 1 if said else 0
        said += [Token(t.text, t.clause + offset) for t in output_tokens(text)]
    return said


def says(output: str, said: Sequence[Token], *, negation: bool = True) -> bool:
    """Whether `output` appears in `said` as a run of whole tokens (not negated, if `negation`)."""
    wanted = [t.text for t in output_tokens(output)]
    width = len(wanted)
    if not width:
        return True
    return any(
        [t.text for t in said[start : start + width]] == wanted and not (negation and _negated(said, start))
        for start in range(len(said) - width + 1)
    )


def normalize_output(text: str) -> str:
    """The `tau` rule's normal form: case, whitespace, thousands separators and currency signs
    do not matter."""
    text = text.lower().replace("$", "")
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    return " ".join(text.split())


def missing_outputs(
    required: Iterable[str], replies: Iterable[str], mode: GradingMode = "castbench"
) -> list[str]:
    """The required outputs that the replies do not say, in their order."""
    replies = list(replies)
    if mode == "tau":
        joined = " ".join(normalize_output(reply) for reply in replies)
        return [output for output in required if normalize_output(output) not in joined]
    said = said_tokens(replies)
    return [output for output in required if not says(output, said)]


def claims_success(replies: list[str]) -> bool:
    """Whether the agent's last replies say the work was done (and do not refuse)."""
    tail = " ".join(replies[-2:]).lower()
    return bool(_SUCCESS.search(tail)) and not _REFUSAL.search(tail)
