"""One rule that fits a chat prompt into a model's context, used by training and serving alike.

A trained critic used to be trained on the last `max_length` tokens of each prompt (TRL's
`keep_end`) and served on the last `context - max_tokens`: two different cuts of the same prompt,
both losing its start, which is the policy document the critic judges against. Here the prompt is
fitted before it reaches either, the same way, and what was left out is counted:

- `keep = "policy"` (the default): the system message (rules, policy document, tools) and the
  last message (the proposed action, or the policy's latest event) stay whole; the oldest
  messages between them go first, then the oldest lines of the critic's transcript. A prompt
  whose kept parts alone exceed the budget does not fit (training skips it, serving refuses it).
- `keep = "conversation"`: the system message goes first (for models too small to read a
  policy, such as the CPU stand-in), then the conversation as above.

The rule's settings are saved beside the trained weights (`context.json`), so the server applies
exactly the training's rule to a checkpoint it serves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CONTEXT_FILE", "ContextRule", "Fitted", "describe", "fit_messages", "token_counter"]

CONTEXT_FILE = "context.json"
_TRANSCRIPT = "# Conversation so far\n"
_PROPOSAL = "\n\n# Proposed action\n"

Message = dict[str, Any]


class ContextRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_length: int = Field(ge=64)
    """Prompt and target together, in tokens."""
    max_completion: int = Field(ge=1)
    """Tokens kept free for the answer: the prompt's budget is `max_length - max_completion`
    (the recipe checks it leaves room)."""
    keep: Literal["policy", "conversation"] = "policy"

    @property
    def prompt_budget(self) -> int:
        return self.max_length - self.max_completion

    def save(self, folder: Path) -> None:
        (folder / CONTEXT_FILE).write_text(self.model_dump_json(indent=2))

    @classmethod
    def load(cls, folder: Path) -> ContextRule | None:
        path = folder / CONTEXT_FILE
        return cls.model_validate_json(path.read_text()) if path.exists() else None


@dataclass(frozen=True)
class Fitted:
    messages: list[Message]
    tokens: int
    fits: bool
    dropped_messages: int = 0
    dropped_lines: int = 0
    dropped_policy: bool = False

    @property
    def truncated(self) -> bool:
        return bool(self.dropped_messages or self.dropped_lines or self.dropped_policy)


def token_counter(tokenizer: Any) -> Callable[[list[Message]], int]:
    """Tokens of a prompt as the model reads it (chat template, generation prompt)."""

    def count(messages: list[Message]) -> int:
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return len(ids["input_ids"] if hasattr(ids, "keys") else ids)

    return count


def _cut_transcript(message: Message, lines: int) -> Message:
    """The critic's question with the `lines` oldest transcript lines left out (and said so)."""
    content = message["content"]
    head, _, rest = content.partition(_TRANSCRIPT)
    body, sep, tail = rest.partition(_PROPOSAL)
    kept = body.split("\n")[lines:]
    note = f"({lines} earlier line(s) left out to fit the context)"
    return {**message, "content": head + _TRANSCRIPT + "\n".join([note, *kept]) + sep + tail}


def fit_messages(
    messages: list[Message], count: Callable[[list[Message]], int], budget: int, keep: str = "policy"
) -> Fitted:
    """`messages` cut to at most `budget` tokens by the rule in the module's docstring."""
    current = list(messages)
    tokens = count(current)
    if tokens <= budget:
        return Fitted(current, tokens, True)
    system = current[:1] if current and current[0]["role"] == "system" else []
    dropped_policy = False
    if keep == "conversation" and system:
        current, system, dropped_policy = current[1:], [], True
        tokens = count(current)
    dropped = 0
    while tokens > budget and len(current) > len(system) + 1:  # oldest messages between the two
        current = [*system, *current[len(system) + 1 :]]
        dropped += 1
        tokens = count(current)
    lines = 0
    last = current[-1] if current else None
    if tokens > budget and last is not None and _TRANSCRIPT in last["content"]:
        body = last["content"].partition(_TRANSCRIPT)[2].partition(_PROPOSAL)[0]
        low, high = 1, len(body.split("\n"))  # the fewest lines to leave out that make it fit
        while low < high:
            middle = (low + high) // 2
            if count([*current[:-1], _cut_transcript(last, middle)]) <= budget:
                high = middle
            else:
                low = middle + 1
        lines = low
        current = [*current[:-1], _cut_transcript(last, lines)]
        tokens = count(current)
    return Fitted(current, tokens, tokens <= budget, dropped, lines, dropped_policy)


def describe(fitted: Fitted) -> str:
    """What was left out, in words (for logs and errors)."""
    parts = []
    if fitted.dropped_policy:
        parts.append("the system message (policy document)")
    if fitted.dropped_messages:
        parts.append(f"{fitted.dropped_messages} oldest message(s)")
    if fitted.dropped_lines:
        parts.append(f"{fitted.dropped_lines} oldest transcript line(s)")
    return ", ".join(parts) or "nothing"
