"""Tasks: what a simulated user wants, what they know, and the ground truth that grades it.

Everything here except `UserScenario.request` and the persona is privileged: the policy and a
deployed critic never see a `Task`, only views built in `castbench._agents.views`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "DeviceStep",
    "EarnedSpec",
    "Fact",
    "GradingSpec",
    "Lookup",
    "Mention",
    "Rival",
    "Task",
    "TaskFileError",
    "ToolCall",
    "UserScenario",
    "load_tasks",
    "tasks_from",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolCall(_Strict):
    """A call of a domain tool by name with JSON arguments."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    actor: Literal["agent", "user"] = "agent"
    """`user` for an action the user performs on their own side (a phone setting, say), with a
    tool of the domain's `user_toolkit`."""

    def canonical(self) -> str:
        """A stable text form: same tool and same arguments give the same string."""
        return f"{self.name}({json.dumps(self.arguments, sort_keys=True, separators=(',', ':'))})"


class Fact(_Strict):
    """Something the user knows but says only when the agent asks for it.

    `keywords` are the words that, found in the agent's message, count as asking.
    `statement` is how the user says it ("My email is ...").
    """

    name: str
    value: str
    keywords: list[str] = Field(min_length=1)
    statement: str


class DeviceStep(_Strict):
    """Something the user does on their own side when the agent tells them to.

    The scripted user performs `call` (a user-side tool) when the agent's message contains every
    one of `keywords`; an oracle agent says `instruction` to get it done.
    """

    instruction: str
    keywords: list[str] = Field(min_length=1)
    call: ToolCall


class UserScenario(_Strict):
    request: str
    """The opening message."""
    facts: list[Fact] = Field(default_factory=list)
    confirm: bool = True
    """How the user answers a request to confirm a change."""
    persona: str = ""
    device_steps: list[DeviceStep] = Field(default_factory=list)
    instructions: str
    """The whole brief for an LLM user simulator (kept from the agent)."""


class GradingSpec(_Strict):
    normalize_text: list[str] = Field(default_factory=list)
    """`table.field` names compared case- and whitespace-insensitively."""
    ignore_fields: list[str] = Field(default_factory=list)
    """`table.field` names left out of the state comparison."""


class Lookup(_Strict):
    """A call the agent must have made (successfully) before a refusal or a "no change" counts:
    any one of `any_of`, equivalent ways of establishing the same fact. A call matches when it
    names the same tool and agrees on every argument listed here (text compared case- and
    whitespace-insensitively, numbers by value); arguments left out (free text) may be anything."""

    any_of: list[ToolCall] = Field(min_length=1)


class Mention(_Strict):
    """Something the agent must say: any one of `any_of` (equivalent wordings) in one message."""

    any_of: list[str] = Field(min_length=1)


class Rival(_Strict):
    """A required output and the other values of its kind a reply must not state beside it: the
    other flights of a search, the totals of the customer's other orders. A reply that lists every
    candidate has not answered; the output counts only in a reply that names none of `others`."""

    output: str
    others: list[str] = Field(min_length=1)


class EarnedSpec(_Strict):
    """What earns a task whose right answer leaves the state alone (`refuse`, `no_change`).

    A do-nothing agent leaves such a state right by construction, so the state alone proves
    nothing: the agent must also have looked up what the ground truth looks up (`lookups`),
    told the user the blocking fact (`reasons`: the status, the rule, the amount), and, where
    the user declines a change, have put that concrete change to the user as a question
    (`offer`: what that question must mention)."""

    lookups: list[Lookup] = Field(default_factory=list)
    """Empty only in a broken task, which `castbench domains validate` names."""
    reasons: list[Mention] = Field(default_factory=list)
    offer: list[Mention] = Field(default_factory=list)
    offer_rivals: list[str] = Field(default_factory=list)
    """Changes and records other than the one offered (another write's verb, the customer's
    other orders): a question that names any of them offers everything, not the change."""
    false_claims: list[Mention] = Field(default_factory=list)
    """What is false for this task: a reason that does not hold here, a value from a record the
    task is not about. A reply that states any wording of one (not negated) fails the check, as
    an over-claiming answer would fail a human reviewer: saying the right reason among every
    reason the policy knows is not stating the reason."""
    rivals: list[Rival] = Field(default_factory=list)
    derived: bool = False
    """Derived by castbench for a published task set that has no such rule (the τ packs): the
    `tau` grading mode, which reproduces that benchmark's own reward, leaves it out. A spec
    written into a task file is part of the task in every grading mode."""


class Task(_Strict):
    id: str
    split: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    """`train` and `test` for castbench's generated domains; a task pack may have others (`dev`)."""
    family: str
    outcome: Literal["change", "no_change", "refuse"]
    """What a correct agent achieves: a state change, nothing to change, or a refusal."""
    scenario: UserScenario
    actions: list[ToolCall]
    """Ground truth, in order; replayed on the pristine state to get the expected state."""
    declined_actions: list[ToolCall] = Field(default_factory=list)
    """Writes a correct agent proposes and the user turns down (`scenario.confirm` is False):
    they must not run. Lets the oracle exercise a refused confirmation."""
    required_outputs: list[str] = Field(default_factory=list)
    """Facts the agent must tell the user (found in its replies, normalised)."""
    grading: GradingSpec = Field(default_factory=GradingSpec)
    ordered: bool = False
    """True when the order of the write actions matters to the outcome."""
    earned: EarnedSpec | None = None
    """How a `refuse` or `no_change` outcome is earned (see `EarnedSpec`); None for `change`."""

    def with_synonyms(self, synonyms: Mapping[str, Sequence[str]]) -> Task:
        """This task with each reason and false claim of its earned spec also in the synonyms of
        its wordings (`DomainRules.reason_synonyms`): itself when none applies."""
        spec = self.earned
        if spec is None or not synonyms:
            return self

        def widened(mentions: list[Mention]) -> list[Mention]:
            return [
                Mention(
                    any_of=list(
                        dict.fromkeys([*m.any_of, *(s for w in m.any_of for s in synonyms.get(w, ()))])
                    )
                )
                for m in mentions
            ]

        reasons, claims = widened(spec.reasons), widened(spec.false_claims)
        if reasons == spec.reasons and claims == spec.false_claims:
            return self
        return self.model_copy(
            update={"earned": spec.model_copy(update={"reasons": reasons, "false_claims": claims})}
        )


class TaskFileError(ValueError):
    """A task file that cannot be used; the message names the file, the task and the field."""


def load_tasks(path: Path) -> list[Task]:
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TaskFileError(f"{path}: cannot read task file: {exc}") from exc
    return tasks_from(raw, str(path))


def tasks_from(raw: Any, where: str) -> list[Task]:
    """The tasks of a task file's parsed JSON (`where` names it in errors): a list of tasks."""
    if not isinstance(raw, list):
        raise TaskFileError(f"{where}: expected a JSON list of tasks, got {type(raw).__name__}")
    tasks: list[Task] = []
    seen: set[str] = set()
    for position, item in enumerate(raw):
        task_id = item.get("id", f"#{position}") if isinstance(item, dict) else f"#{position}"
        try:
            task = Task.model_validate(item)
        except ValidationError as exc:
            problems = "; ".join(
                f"field '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}" for err in exc.errors()
            )
            raise TaskFileError(f"{where}: task {task_id}: {problems}") from exc
        if task.id in seen:
            raise TaskFileError(f"{where}: task {task.id}: duplicate task id")
        seen.add(task.id)
        tasks.append(task)
    return tasks
