"""User traits (τ-Trait's idea, our own simulator): impatience, confusion, skepticism and
incoherence, each at an intensity. A trait profile is part of a run's configuration.

The scripted user acts them out deterministically from the trial seed; an LLM user gets
`trait_instructions` appended to its brief.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["LEVELS", "TRAITS", "Level", "Trait", "parse_traits", "trait_instructions"]

Trait = Literal["impatience", "confusion", "skepticism", "incoherence"]
Level = Literal["low", "medium", "high"]
TRAITS: tuple[str, ...] = get_args(Trait)
LEVELS: tuple[str, ...] = get_args(Level)

_DESCRIPTIONS = {
    "impatience": "You are impatient: keep replies short, and if the agent asks again for something you "
    "already said, you get annoyed; after {n} such repeat(s) you end the conversation.",
    "confusion": "You are easily confused: the first time you give a detail you may get part of it wrong "
    "or leave part out (about {pct}% of the time); when asked again, you give it correctly.",
    "skepticism": "You are skeptical: before agreeing to any change, ask why it is needed unless the agent "
    "already explained the reason; be {degree} about it.",
    "incoherence": "You ramble: mix unrelated remarks and small topic drifts into about {pct}% of your "
    "replies, and now and then answer a question with something off-topic first.",
}
_PATIENCE = {"low": 3, "medium": 2, "high": 1}
_RATE = {"low": 0.3, "medium": 0.6, "high": 1.0}


def parse_traits(spec: str | None) -> dict[str, str]:
    """`impatience=high,confusion=low` -> {"confusion": "low", "impatience": "high"}."""
    if not spec or spec.strip() in ("", "none"):
        return {}
    profile: dict[str, str] = {}
    for part in spec.split(","):
        name, equals, level = part.strip().partition("=")
        if equals and not level.strip():  # `impatience=`: a level left out by mistake, not "medium"
            raise ValueError(
                f"trait {name.strip() or '?'} has '=' and no level in '{spec}' "
                f"(levels: {', '.join(LEVELS)}; the name alone means medium)"
            )
        name, level = name.strip(), (level.strip() or "medium")
        if name not in TRAITS:
            raise ValueError(f"unknown trait '{name}' in '{spec}' (traits: {', '.join(TRAITS)})")
        if level not in LEVELS:
            raise ValueError(f"unknown level '{level}' for trait {name} (levels: {', '.join(LEVELS)})")
        if name in profile:
            raise ValueError(f"trait {name} is given twice in '{spec}'")
        profile[name] = level
    return dict(sorted(profile.items()))


def patience(level: str) -> int:
    """Repeated questions an impatient user puts up with before leaving."""
    return _PATIENCE[level]


def rate(level: str) -> float:
    """How often a confused or incoherent user shows it."""
    return _RATE[level]


def trait_instructions(traits: dict[str, str] | None) -> str:
    if not traits:
        return ""
    lines = []
    for name, level in traits.items():
        lines.append(
            _DESCRIPTIONS[name].format(
                n=patience(level),
                pct=int(rate(level) * 100),
                degree={"low": "mild", "medium": "firm", "high": "very insistent"}[level],
            )
        )
    return "\n".join(lines)
