"""Seeded perturbations a run can be measured under: faults at tool execution, reworded users,
reshaped tool outputs. The harness injects them, never the agent, so every agent meets the same
ones; a run's `Perturbations` is part of its identity (`RunConfig.perturbations`).

- **tool faults** (`tool_faults` = rate, `fault_kinds`): a tool call fails before it reaches the
  database (nothing executes), as a transient `error`, a `timeout`, a `rate_limit` answer, an
  `empty` result or a `malformed` one. Each call draws its fault from the trial seed and the
  step, and a call that was faulted once never faults again in that trial: the same call retried
  succeeds, so an agent that retries recovers and one that does not pays for it.
- **user perturbations** (`user`): `paraphrase` rewords the opening request, `reorder` says the
  sentences of each user message (the facts it gives) in another order, `typos` swaps letters in
  some plain words (never in names, ids, numbers or addresses: the facts stay true).
- **environment perturbations** (`env`): `field_order` shuffles the keys of JSON tool outputs,
  `extra_fields` adds fields an agent should ignore. Every domain whose tools answer in JSON
  supports them; other outputs pass unchanged.

Off (`Perturbations()`), an episode holds no perturber and tool execution pays one `None` check.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from castbench._base.conversation import ToolCallAction, canonical_action

__all__ = [
    "ENV_KINDS",
    "FAULT_KINDS",
    "USER_KINDS",
    "FaultKind",
    "Perturbations",
    "TrialPerturber",
    "parse_kinds",
    "profile_conditions",
]

FaultKind = Literal["error", "timeout", "rate_limit", "empty", "malformed"]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
USER_KINDS: tuple[str, ...] = ("paraphrase", "reorder", "typos")
ENV_KINDS: tuple[str, ...] = ("field_order", "extra_fields")

_TYPO_RATE = 0.15
"""Share of plain lowercase words (four letters or more) a `typos` user misspells."""

_FAULT_TEXT: dict[str, tuple[str, bool]] = {
    "error": (
        "Error: the service failed with a transient error; the call was not executed. Try again.",
        True,
    ),
    "timeout": ("Error: the tool call timed out after 30 s; the call was not executed.", True),
    "rate_limit": ("Error 429: rate limit exceeded, retry after a moment; the call was not executed.", True),
    "empty": ("", False),
    "malformed": ('{"status": "ok", "result": {"id": <<truncated', False),
}
"""What the agent sees for each fault kind, and whether it is flagged as an error."""

_PARAPHRASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"^(Hi|Hello)[,!]? ", ("Good morning. ", "Hey there, ", "Hello there! ", "")),
    (r"\bI'd like to\b", ("I would like to", "I want to", "I need to")),
    (r"\bI want to\b", ("I'd like to", "I need to", "I wish to")),
    (r"\bI need to\b", ("I have to", "I'd like to")),
    (r"\bcould you\b", ("can you", "would you")),
    (r"\bcan I\b", ("is it possible to", "may I")),
    (r"\bplease\b", ("if you can", "kindly")),
    (r"\brecently\b", ("a little while ago", "the other day")),
    (r"\bone of my orders\b", ("an order of mine", "one order I have")),
)
_EXTRA_FIELDS = {"_trace_id": "tr-{n:06d}", "_served_by": "node-{m}", "_schema": "v{v}"}


def parse_kinds(spec: str | None, known: tuple[str, ...], what: str) -> list[str]:
    """`typos,paraphrase` -> ["paraphrase", "typos"]; "all" -> every kind; ValueError naming an
    unknown one."""
    if not spec or spec.strip() in ("", "none"):
        return []
    if spec.strip() == "all":
        return sorted(known)
    kinds = sorted({part.strip() for part in spec.split(",") if part.strip()})
    unknown = [kind for kind in kinds if kind not in known]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(unknown)!r} (known: {', '.join(known)})")
    return kinds


class Perturbations(BaseModel):
    """What a run is perturbed with (all off by default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool_faults: float = Field(0.0, ge=0.0, le=1.0)
    """Share of tool calls that fail (each drawn per call)."""
    fault_kinds: list[str] = Field(default_factory=lambda: sorted(FAULT_KINDS))
    user: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    seed: int = 0
    """Added to each trial's seed for the perturbations' draws: the same trials under other faults."""

    @field_validator("fault_kinds", "user", "env")
    @classmethod
    def _known(cls, value: list[str], info: Any) -> list[str]:
        known = {"fault_kinds": FAULT_KINDS, "user": USER_KINDS, "env": ENV_KINDS}[info.field_name]
        return parse_kinds(",".join(value), known, info.field_name.replace("_", " "))

    @field_validator("fault_kinds")
    @classmethod
    def _some(cls, value: list[str], info: ValidationInfo) -> list[str]:
        if not info.data.get("tool_faults"):  # no faults: the kinds change nothing, nor the identity
            if sorted(value) != sorted(FAULT_KINDS):  # chosen, yet nothing would draw them
                raise ValueError(
                    f"fault kinds {', '.join(value) or 'none'} are drawn only with a fault rate: "
                    "give --tool-faults RATE (above 0) too, or leave the kinds out"
                )
            return sorted(FAULT_KINDS)
        if not value:
            raise ValueError("fault kinds: name at least one (or leave the rate at 0)")
        return value

    @property
    def active(self) -> bool:
        return self.tool_faults > 0 or bool(self.user) or bool(self.env)

    def label(self) -> str:
        """One line for tables: `faults 20% (error,timeout) · user typos · env field_order · seed 0`."""
        parts = []
        if self.tool_faults:
            parts.append(f"faults {self.tool_faults:.0%} ({','.join(self.fault_kinds)})")
        if self.user:
            parts.append("user " + ",".join(self.user))
        if self.env:
            parts.append("env " + ",".join(self.env))
        if not parts:
            return "clean"
        return " · ".join(parts) + (f" · seed {self.seed}" if self.seed else "")

    def perturber(self, trial_seed: int) -> TrialPerturber | None:
        """The trial's perturber; None when nothing is perturbed (the episode's fast path)."""
        return TrialPerturber(self, trial_seed) if self.active else None


class TrialPerturber:
    """One trial's draws. Deterministic: the same trial seed and trajectory give the same faults,
    words and outputs."""

    def __init__(self, perturbations: Perturbations, trial_seed: int) -> None:
        self.p = perturbations
        self._seed = f"{perturbations.seed}:{trial_seed}"
        self._faulted: set[str] = set()

    def _rng(self, what: str, index: int) -> random.Random:
        return random.Random(f"{what}:{self._seed}:{index}")

    # -- tool execution ---------------------------------------------------------------------
    def fault(self, step: int, action: ToolCallAction) -> str | None:
        """The fault kind this call meets at this step, or None. A call faulted once is not
        faulted again: retrying it succeeds."""
        if not self.p.tool_faults:
            return None
        key = canonical_action(action)
        if key in self._faulted:
            return None
        rng = self._rng("fault", step)
        if rng.random() >= self.p.tool_faults:
            return None
        self._faulted.add(key)
        return rng.choice(self.p.fault_kinds)

    @staticmethod
    def fault_output(kind: str) -> tuple[str, bool]:
        """The content the agent sees for a fault, and whether it is flagged as an error."""
        return _FAULT_TEXT[kind]

    def tool_output(self, step: int, content: str) -> str:
        """A JSON tool output reshaped (`field_order`, `extra_fields`); anything else unchanged."""
        if not self.p.env or content[:1] not in ("{", "["):
            return content
        try:
            value = json.loads(content)
        except ValueError:
            return content
        rng = self._rng("env", step)
        return json.dumps(self._reshape(value, rng))

    def _reshape(self, value: Any, rng: random.Random) -> Any:
        if isinstance(value, list):
            return [self._reshape(item, rng) for item in value]
        if not isinstance(value, dict):
            return value
        items = [(key, self._reshape(item, rng)) for key, item in value.items()]
        if "extra_fields" in self.p.env:
            name = rng.choice(sorted(_EXTRA_FIELDS))
            if name not in value:
                filler = _EXTRA_FIELDS[name].format(
                    n=rng.randrange(10**6), m=rng.randrange(1, 9), v=rng.randrange(1, 4)
                )
                items.append((name, filler))
        if "field_order" in self.p.env:
            rng.shuffle(items)
        return dict(items)

    # -- the user's words -------------------------------------------------------------------
    def user_text(self, turn: int, text: str) -> str:
        """The user's message as the agent gets it (turn 0: the opening request)."""
        if not self.p.user:
            return text
        rng = self._rng("user", turn)
        if "paraphrase" in self.p.user and turn == 0:
            text = _paraphrase(text, rng)
        if "reorder" in self.p.user:
            sentences = re.split(r"(?<=[.!?])\s+", text.strip())
            if len(sentences) > 1:
                rng.shuffle(sentences)
                text = " ".join(sentences)
        if "typos" in self.p.user:
            text = re.sub(r"(?<![\w@#./-])[a-z]{4,}(?![\w@./-])", lambda m: _typo(m.group(), rng), text)
        return text


def _paraphrase(text: str, rng: random.Random) -> str:
    for pattern, options in _PARAPHRASES:
        if re.search(pattern, text):
            text = re.sub(pattern, rng.choice(options), text, count=1)
    return text[:1].upper() + text[1:]


def _typo(word: str, rng: random.Random) -> str:
    if rng.random() >= _TYPO_RATE:
        return word
    i = rng.randrange(1, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def profile_conditions(
    tool_faults: float, fault_kinds: list[str], user: list[str], env: list[str], seed: int = 0
) -> dict[str, Perturbations]:
    """A profile's perturbed conditions, one kind of perturbation each (`faults`, `user`, `env`),
    leaving out those that are off."""
    found: dict[str, Perturbations] = {}
    if tool_faults > 0:
        found["faults"] = Perturbations(tool_faults=tool_faults, fault_kinds=fault_kinds, seed=seed)
    if user:
        found["user"] = Perturbations(user=user, seed=seed)
    if env:
        found["env"] = Perturbations(env=env, seed=seed)
    return found
