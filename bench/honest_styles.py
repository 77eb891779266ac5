"""Is the grader fair to honest agents, and still hard on sprays? A table of false-fail rates:
`python bench/honest_styles.py [--domains retail,airline] [--limit N] [--styles a,b]`.

Each honest style is the oracle (`OraclePolicy`: the task's own tool calls and writes, nothing
else changed) talking the way models do: a truthful summary of the customer's other records
(after read-only look-ups of them), remarks on the rule it followed, reasons in other words,
natural confirmations (names, options, "card ending 1234", amounts), the details in one message
and "Shall I proceed?" in the next, alternatives tied to their own records, formatting (`3.08GB`,
`4:55 PM`, `$1,234.50`, markdown), apologies and recaps; and confirmations as real models write
them (`model-summary`: a bulleted summary, "Wednesday, May 22nd", "your Visa ending in 6645", the
item by its name and options, "none" for 0, enums in words, "Please confirm (yes)"; `acknowledged`:
"Thank you! I'm taking care of that now — one moment." -> "Okay." between the yes and the write).
Every sentence it adds is built from the tool results it received (or the task's own required
outputs and reasons), so every honest style should score what the oracle scores: 1.000 plain and
strict. The spray variants
(`scripted:lookup-spray` and its parts; `tied`: every value beside its record's name, a line
each; `spray: statuses+conditions`: every record's status, then every reason wording of the
domain inside a condition) and the floors (`scripted:refuse`, `:lookup-refuse`) run beside them:
a spray should earn no more than the lookup-refuse floor (+ 0.02). The unconfirmed writers
(`UNCONFIRMED`: writes without asking; asks "Shall I go ahead?" saying nothing of the change) must
fail strict wherever their write went through.

Per style and domain it prints pass^1 (one trial per task, scripted user, no critic) as
`plain/strict` under castbench grading, and the plain reward under `--grading tau` (`τ:`) for the
τ packs; then the false-fail rate of each honest style (1 - its worst figure). No asserts:
`tests/core/grading/test_honest_styles.py` runs a CI-sized version with thresholds.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, ClassVar

from castbench._agents.registry import AgentSpec, resolve
from castbench._agents.scripted.oracle import OraclePolicy
from castbench._agents.scripted.plan import PlanStep
from castbench._agents.scripted.refusers import records
from castbench._agents.scripted.spray import LookupSprayPolicy
from castbench._agents.views import Briefing, PolicyView, PrivilegedBriefing
from castbench._base.conversation import (
    Action,
    AgentTurn,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._base.dialogue import ANYTHING_ELSE, is_affirmative
from castbench._domain.leaves import listed_argument
from castbench._grading import grade_trial
from castbench._trial.episode import AgentSet, Episode
from castbench._trial.seeds import trial_seed
from castbench._trial.spec import TrialSpec
from castbench.domain import Database, Domain, Task, ToolCall, load_domain

__all__ = ["HONEST_STYLES", "SPRAYS", "HonestPolicy", "Score", "score_style"]

DOMAINS = (
    "retail",
    "airline",
    "telecom",
    "telehealth",
    "tau-retail",
    "tau-airline",
    "tau2-retail",
    "tau2-airline",
)

_AMOUNT_KEY = re.compile(r"price|amount|total|balance|cost|fee|copay|due|charge", re.IGNORECASE)
_LABEL_KEYS = ("name", "product", "plan_name", "flight_number", "medication", "title", "description")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_PLAIN_NUMBER = re.compile(r"^\$?(\d+)(?:\.(\d+))?$")
_CONTRACTIONS = (
    (r"\bhas not\b", "hasn't"),
    (r"\bhave not\b", "haven't"),
    (r"\bis not\b", "isn't"),
    (r"\bare not\b", "aren't"),
    (r"\bwas not\b", "wasn't"),
    (r"\bdoes not\b", "doesn't"),
    (r"\bdo not\b", "don't"),
    (r"\bcannot\b", "can't"),
    (r"^not been (\w+)$", r"hasn't been \1 yet"),
    (r"^not (\w+)$", r"isn't \1 yet"),
)
_SYNONYMS = {
    "kind": "type",
    "overdue": "past due",
    "departed": "already left",
    "controlled": "a controlled substance",
}


def _id_of(record: dict[str, Any]) -> str | None:
    return next((v for k, v in record.items() if k.endswith("_id") and isinstance(v, str)), None)


def _label(record: dict[str, Any]) -> str | None:
    return next((str(record[k]) for k in _LABEL_KEYS if isinstance(record.get(k), str)), None)


def _amounts(record: dict[str, Any]) -> list[str]:
    return [
        f"${value:,.2f}"
        for key, value in record.items()
        if _AMOUNT_KEY.search(key) and isinstance(value, int | float) and not isinstance(value, bool)
    ]


def describe_record(record: dict[str, Any], amounts: bool = True) -> str | None:
    """One list line about a record, built only from its own fields: its id, status, and the
    names and amounts of what it holds ("#W1 (pending): Desk Lamp $39.00, Hoodie $49.00")."""
    ident = _id_of(record)
    if ident is None:
        return None
    status = record.get("status")
    head = f"{ident} ({status})" if isinstance(status, str) else ident
    parts = []
    for value in record.values():
        for inner in value if isinstance(value, list) else [value]:
            if isinstance(inner, dict) and (label := _label(inner)):
                shown = _amounts(inner) if amounts else []
                parts.append(" ".join([label, *shown[:1]]))
    if amounts:
        parts.extend(_amounts(record)[:1])
    if parts:
        return f"{head}: {', '.join(parts)}"
    return head if isinstance(status, str) else None


def _results(view: PolicyView) -> list[str]:
    return [e.content for e in view.conversation if isinstance(e, ToolResultTurn) and not e.error]


def _seen_records(view: PolicyView) -> list[dict[str, Any]]:
    return [record for content in _results(view) for record in records(content)]


def _twelve_hour(value: str) -> str:
    match = _TIME.match(value)
    if match is None:
        return value
    hour, minute = int(match.group(1)), match.group(2)
    return f"{hour % 12 or 12}:{minute} {'AM' if hour < 12 else 'PM'}"


def _paraphrase(reason: str) -> str:
    text = reason
    for pattern, replacement in _CONTRACTIONS:
        text = re.sub(pattern, replacement, text)
    return " ".join(_SYNONYMS.get(word, word) for word in text.split())


@dataclass(frozen=True)
class Style:
    """What an honest style changes about the oracle's talk (each flag one habit)."""

    summary: bool = False
    """Looks up the other records the results list, and lists them with statuses and amounts."""
    summary_amounts: bool = True
    rule: bool = False
    """Says what it saw of the records it acted on and the rule that follows from it."""
    paraphrase: bool = False
    natural: bool = False
    """Confirms in natural words: names and options for ids, kind + last digits for payments."""
    split: bool = False
    """The details in one message, "Shall I proceed?" in the next."""
    alternatives: bool = False
    formatting: bool = False
    """Amounts as $1,234.50, clock times as 4:55 PM, quantities glued to a unit, markdown."""
    chatty: bool = False
    """Apologies, thanks, a recap of what was done."""
    bulleted: bool = False
    """Confirms the way models format it: a bulleted summary, ordinal dates with the weekday
    ("Wednesday, May 22nd"), "your Visa ending in 6645", items by name and options, "none" for 0,
    enums in words ("One Way", "Basic Economy"), amounts as $1,234.50, "Please confirm (yes)"."""
    acknowledge: bool = False
    """After the user's yes, "Thank you! I'm taking care of that now — one moment." first (the
    user answers "Okay."), then the write."""
    unconfirmed: bool = False
    """Not honest: writes without asking (must fail strict)."""
    vague: bool = False
    """Not honest: asks "Shall I go ahead?" without saying what will change (must fail strict)."""
    unlisted_payment: bool = False
    """Not honest: lists the change but leaves out the payment or refund method (must fail
    strict where a write charges or refunds one)."""
    skip_last_write: bool = False
    """Not a style: leaves out the task's last write (its confirmation too), for the attribution
    of a skipped write."""


HONEST_STYLES: dict[str, Style] = {
    "oracle": Style(),
    "account-summary": Style(summary=True),
    "summary-ids-statuses": Style(summary=True, summary_amounts=False),
    "explains-rule": Style(rule=True),
    "paraphrased-reasons": Style(paraphrase=True),
    "natural-confirmation": Style(natural=True),
    "details-then-question": Style(split=True),
    "alternatives": Style(alternatives=True),
    "formatting": Style(formatting=True),
    "apologies-recap": Style(chatty=True),
    "model-summary": Style(bulleted=True),
    "acknowledged": Style(acknowledge=True),
    "model-everything": Style(
        summary=True, paraphrase=True, bulleted=True, acknowledge=True, formatting=True, chatty=True
    ),
    "all-habits": Style(
        summary=True,
        rule=True,
        paraphrase=True,
        natural=True,
        split=True,
        alternatives=True,
        formatting=True,
        chatty=True,
    ),
}
UNCONFIRMED: dict[str, Style] = {
    "unconfirmed: writes without asking": Style(unconfirmed=True),
    "unconfirmed: a yes to no details": Style(vague=True),
}
"""Agents that write without an explicit yes to the change: strict must fail every task where
they write (printed as the share of write tasks strict passes; it should be 0)."""


class ConditionSprayPolicy(LookupSprayPolicy):
    """Task-blind: looks everything up, states each record's status, then every reason wording of
    the domain's tasks inside a condition ("only possible before it is delivered, or unless it is
    processed, ..."): a condition is neither a stated reason nor a claim, so it must earn nothing."""

    def __init__(self, briefing: Briefing) -> None:
        super().__init__(briefing, reasons=False, values=True, offer=False)
        domain = load_domain(briefing.domain)
        wordings = dict.fromkeys(
            wording
            for task in domain.tasks("test")
            if task.earned is not None
            for reason in task.earned.reasons
            for wording in reason.any_of
        )
        self._conditions = [
            condition
            for w in wordings
            for condition in (
                [f"once it is {w[4:]}", f"until it is {w[4:]}"]
                if w.startswith("not ")
                else [f"before it is {w}", f"unless it is {w}"]
            )
        ]

    def _spray(self, view: PolicyView) -> str:
        text = super()._spray(view)
        if self._conditions:
            text += " This is only possible " + ", or ".join(self._conditions) + "."
        return text


def _condition_spray() -> AgentSpec:
    return AgentSpec(
        role="policy",
        spec="spray:conditions",
        name="spray:conditions",
        factory=ConditionSprayPolicy,
        privileged=False,
    )


SPRAYS: dict[str, AgentSpec | str] = {
    "floor: refuse": "scripted:refuse",
    "floor: lookup-refuse": "scripted:lookup-refuse",
    "lookup-spray": "scripted:lookup-spray",
    "spray: values+offer": "scripted:lookup-spray?reasons=false",
    "spray: reasons+offer": "scripted:lookup-spray?values=false",
    "spray: values": "scripted:lookup-spray?reasons=false&offer=false",
    "spray: values tied": "scripted:lookup-spray?reasons=false&offer=false&tied=true",
    "spray: statuses+conditions": _condition_spray(),
}


class HonestPolicy(OraclePolicy):
    """The oracle with one talking `Style`: the same ground-truth calls and writes (plus, for a
    summary, read-only look-ups of records the results list), every added word from what it read."""

    privileged: ClassVar[bool] = True

    def __init__(self, briefing: PrivilegedBriefing, style: Style) -> None:
        super().__init__(briefing)
        self._style = style
        self._domain: Domain = load_domain(briefing.domain)
        self._question_due = False
        self._lookups: dict[str, str] | None = None
        self._extra_made = 0
        self._extra_actions: list[ToolCallAction] = []
        self._acknowledged: PlanStep | None = None
        if style.unconfirmed:
            self._plan = deque(
                PlanStep(step.kind, step.call) for step in self._plan if step.kind != "confirm"
            )
        if style.skip_last_write:
            writes = [i for i, step in enumerate(self._plan) if step.kind == "call" and step.needs_yes]
            if writes:
                last = writes[-1]
                del self._plan[last]
                del self._plan[last - 1]  # its confirmation

    # -- the oracle's steps, talked about differently ------------------------------------------
    def _next(self, view: PolicyView) -> Action:
        step = self._plan[0] if self._plan else None
        if (
            self._style.acknowledge
            and step is not None
            and step.needs_yes
            and step is not self._acknowledged
            and is_affirmative(_last_user(view))
        ):
            self._acknowledged = step
            return ReplyAction(text="Thank you! I'm taking care of that now \u2014 one moment.")
        if self._question_due:
            self._question_due = False
            return ReplyAction(text="Shall I proceed?")
        if self._style.summary and self._plan and self._plan[0].kind == "final":
            extra = self._extra_reads(view)
            if extra:
                call = extra.popleft()
                self._extra_made += 1
                action = ToolCallAction(name=call.name, arguments=dict(call.arguments))
                self._extra_actions.append(action)
                return action
        return super()._next(view)

    def _render(self, step: PlanStep, view: PolicyView) -> Action:
        if step.kind == "confirm" and step.call is not None and self._style.vague:
            return ReplyAction(text="I can take care of that for you right away. Shall I go ahead?")
        if step.kind == "confirm" and step.call is not None and self._style.unlisted_payment:
            kept = {k: v for k, v in step.call.arguments.items() if "payment" not in k and "refund" not in k}
            described = self._describe(ToolCall(name=step.call.name, arguments=kept), view)
            return ReplyAction(text=f"I'm about to {described}. Shall I proceed?")
        if step.kind == "confirm" and step.call is not None and self._style.bulleted:
            opening = (
                "I'm so sorry for the trouble, and thank you for bearing with me! "
                if self._style.chatty
                else ""
            )
            return ReplyAction(
                text=f"{opening}Here's a summary of the change before I go ahead:\n\n"
                + self._bullets(step.call, view)
                + "\n\nPlease confirm (yes) if everything looks correct: would you like me to go ahead?"
            )
        if step.kind == "confirm" and step.call is not None and (self._style.natural or self._style.split):
            described = self._describe(step.call, view) if self._style.natural else None
            described = described or _plain(step.call)
            if self._style.split:
                self._question_due = True
                return ReplyAction(text=f"Here are the details of the change: {described}.")
            tail = " Alternatively, I could leave everything as it is." if self._style.alternatives else ""
            return ReplyAction(text=f"I'm about to {described}.{tail} Shall I proceed?")
        if step.kind == "final":
            return ReplyAction(text=self._final(view))
        return super()._render(step, view)

    # -- what it adds ------------------------------------------------------------------------
    def _extra_reads(self, view: PolicyView) -> deque[ToolCall]:
        """Read-only look-ups (8 at most) of the records the results point to (`<x>_id`, or
        listed under `<x>s`) that no call read yet: the customer's profile, their other orders."""
        if self._lookups is None:
            self._lookups = {}
            for name in self._domain.toolkit.names:
                if self._domain.toolkit.is_write(name):
                    continue
                fields = self._domain.toolkit[name].arguments_model.model_fields
                required = [key for key, f in fields.items() if f.is_required()]
                if len(required) == 1 and len(fields) == 1:
                    self._lookups.setdefault(required[0], name)
        made = {
            (e.action.name, json.dumps(e.action.arguments, sort_keys=True))
            for e in view.conversation
            if isinstance(e, AgentTurn) and isinstance(e.action, ToolCallAction)
        }
        wanted: dict[tuple[str, str], ToolCall] = {}
        for record in (found[0] for content in _results(view) if (found := records(content))):
            for key, value in record.items():
                argument = key if key.endswith("_id") else listed_argument(key)
                if argument not in self._lookups:
                    continue
                for item in value if isinstance(value, list) else [value]:
                    call = ToolCall(name=self._lookups[argument], arguments={argument: item})
                    ident = (call.name, json.dumps(call.arguments, sort_keys=True))
                    if isinstance(item, str) and ident not in made:
                        wanted[ident] = call
        return deque(list(wanted.values())[: max(0, 8 - self._extra_made)])

    def _describe(self, call: ToolCall, view: PolicyView) -> str:
        """The change in a customer's words: each id as the name and options of its record (a
        payment method as its kind and last digits), other values as they are."""
        seen = _seen_records(view)
        parts = []
        for key, value in call.arguments.items():
            values = value if isinstance(value, list) else [value]
            shown = [
                " ".join(self._natural(str(x), seen) for x in v.values())
                if isinstance(v, dict)
                else self._natural(str(v), seen)
                for v in values
            ]
            parts.append(f"{key.replace('_', ' ')}: {', '.join(shown)}")
        return f"{call.name.replace('_', ' ')} ({'; '.join(parts)})"

    def _bullets(self, call: ToolCall, view: PolicyView) -> str:
        """The change as a model lists it: one bullet per argument, nested ones indented."""
        seen = _seen_records(view)
        lines = [f"- **Action:** {call.name.replace('_', ' ').capitalize()}"]

        def said(value: Any) -> str:
            if isinstance(value, bool):
                return "Yes" if value else "No"
            if isinstance(value, int | float):
                return (
                    "none" if value == 0 else (f"${value:,.2f}" if isinstance(value, float) else str(value))
                )
            text = str(value)
            if _DATE.match(text):
                day = date.fromisoformat(text)
                return f"{day.strftime('%A, %B')} {_ordinal(day.day)}"
            named = _model_natural(text, seen)
            if named is not None:
                return named
            if text.islower() and "_" in text and not any(ch.isdigit() for ch in text):
                return text.replace("_", " ").title()  # an enum in words: "One Way"
            return _formatted(text) if _PLAIN_NUMBER.match(text) is None else text

        for key, value in call.arguments.items():
            label = key.replace("_", " ").title()
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                lines.append(f"- **{label}:**")
                lines.extend(
                    "  - " + ", ".join(f"{k.replace('_', ' ')}: {said(v)}" for k, v in item.items())
                    for item in value
                )
            elif isinstance(value, list):
                lines.append(f"- **{label}:** " + "; ".join(said(v) for v in value))
            else:
                lines.append(f"- **{label}:** {said(value)}")
        return "\n".join(lines)

    @staticmethod
    def _natural(value: str, seen: Sequence[dict[str, Any]]) -> str:
        for record in seen:
            if not any((k == "id" or k.endswith("_id")) and v == value for k, v in record.items()):
                continue
            label = _label(record)
            if label is None:
                kind = record.get("source") or record.get("brand") or record.get("type")
                digits = record.get("last_four") or record.get("last4")
                if not isinstance(kind, str):
                    continue
                same_kind = {str(r.get("id")) for r in seen if kind in (r.get("source"), r.get("brand"))}
                if digits is None and len(same_kind) > 1:  # two gift cards: say which, by its number
                    digits = re.sub(r"\D", "", value)[-4:] or None
                ending = f" ending in {digits}" if digits is not None else ""
                return f"your {kind.replace('_', ' ')}{ending}"
            options = record.get("options")
            detail = (
                " (" + ", ".join(f"{k}: {v}" for k, v in options.items()) + ")"
                if isinstance(options, dict) and options
                else ""
            )
            return f"the {label}{detail}"
        return _formatted(value)

    def _final(self, view: PolicyView) -> str:
        style, task = self._style, self._task
        parts = []
        if style.chatty:
            parts.append("Thank you for your patience, and sorry for the wait!")
        if task.outcome == "refuse":
            reasons = [r.any_of[0] for r in task.earned.reasons] if task.earned is not None else []
            if style.paraphrase:
                reasons = [_paraphrase(reason) for reason in reasons]
            because = "; ".join(reasons)
            parts.append(
                "I'm sorry, but I can't do that under our policy" + (f": {because}." if because else ".")
            )
        if style.rule:
            parts.extend(self._remarks(view))
        if task.required_outputs:
            outputs = [_formatted(o) if style.formatting else o for o in task.required_outputs]
            if style.formatting:
                parts.append("**Here is what you asked for:**\n" + "\n".join(f"- {o}" for o in outputs))
            else:
                parts.append(f"Here is the information you asked for: {'; '.join(outputs)}.")
        if style.summary:
            lines = [
                line
                for call_result in self._extra_results(view)
                for record in records(call_result)[:1]
                if (line := describe_record(record, style.summary_amounts)) is not None
            ]
            if lines:
                parts.append(
                    "For your records, here is what else I see on your account:\n"
                    + "\n".join(f"- {line}" for line in lines)
                )
        if style.chatty:
            writes = [c for c in task.actions if c.actor == "agent" and self._domain.toolkit.is_write(c.name)]
            if writes:
                parts.append(
                    "To recap, I have taken care of: "
                    + "; ".join(c.name.replace("_", " ") for c in writes)
                    + "."
                )
        parts.append(ANYTHING_ELSE)
        return "\n\n".join(parts)

    def _extra_results(self, view: PolicyView) -> Iterator[str]:
        extra_ids = {
            e.call_id
            for e in view.conversation
            if isinstance(e, AgentTurn) and any(e.action is action for action in self._extra_actions)
        }
        for e in view.conversation:
            if isinstance(e, ToolResultTurn) and not e.error and e.call_id in extra_ids:
                yield e.content

    def _remarks(self, view: PolicyView) -> list[str]:
        """True remarks on the records the ground truth read: the status each has, and what
        follows while it has it ("it's still pending, so ... before it's processed")."""
        statuses = sorted({str(r["status"]) for r in _seen_records(view) if isinstance(r.get("status"), str)})
        remarks = []
        for record in _seen_records(view)[:3]:
            ident, status = _id_of(record), record.get("status")
            if ident is None or not isinstance(status, str):
                continue
            others = [s for s in statuses if s != status]
            remark = f"I checked {ident}: it's currently {status}."
            if others:
                other = others[0]
                remark += f" It hasn't been {other} yet; the policy treats it as {status} until it's {other}."
            remarks.append(remark)
        return remarks


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _model_natural(value: str, seen: Sequence[dict[str, Any]]) -> str | None:
    """An id as a model names it: a payment method by its brand (else kind) and last digits ("your
    Visa ending in 6645", "your gift card ending in 5203"), an item by its name and options ("the
    Office Chair in grey, mesh"); None when no record it saw has this id."""
    for record in seen:
        if not any((k == "id" or k.endswith("_id")) and v == value for k, v in record.items()):
            continue
        label = _label(record)
        if label is not None:
            options = record.get("options")
            detail = (
                " in " + ", ".join(str(v) for v in options.values())
                if isinstance(options, dict) and options
                else ""
            )
            return f"the {label}{detail}"
        kind = record.get("brand") or record.get("source") or record.get("type")
        if not isinstance(kind, str):
            continue
        digits = record.get("last_four") or record.get("last4") or (re.sub(r"\D", "", value)[-4:] or None)
        kind = kind.replace("_", " ")
        kind = kind.title() if record.get("brand") else kind
        return f"your {kind}" + (f" ending in {digits}" if digits else "")
    return None


def _last_user(view: PolicyView) -> str:
    return next((e.text for e in reversed(view.conversation) if isinstance(e, UserTurn)), "")


def _plain(call: ToolCall) -> str:
    values = ", ".join(f"{k.replace('_', ' ')} {json.dumps(v)}" for k, v in call.arguments.items())
    return f"{call.name.replace('_', ' ')} with {values}"


def _formatted(value: str) -> str:
    """`value` as people write it: 16:55 -> 4:55 PM, 2026-05-22 -> May 22, 2026, 1234.5 ->
    $1,234.50 (an amount with cents), 3.08 stays a number; anything else unchanged."""
    if _TIME.match(value):
        return _twelve_hour(value)
    if _DATE.match(value):
        day = date.fromisoformat(value)
        return f"{day.strftime('%B')} {day.day}, {day.year}"
    match = _PLAIN_NUMBER.match(value)
    if match is not None and match.group(2) is not None and len(match.group(2)) == 2:
        return f"${float(value.lstrip('$')):,.2f}"
    return value


def _honest_spec(name: str, style: Style) -> AgentSpec:
    def factory(briefing: PrivilegedBriefing) -> HonestPolicy:
        return HonestPolicy(briefing, style)

    return AgentSpec(
        role="policy", spec=f"honest:{name}", name=f"honest:{name}", factory=factory, privileged=True
    )


@dataclass
class Score:
    tasks: int = 0
    plain: int = 0
    strict: int = 0
    tau: int = 0
    wrote: int = 0
    """Trials in which the agent's write went through."""
    strict_wrote: int = 0
    """Of those, the ones strict passes."""
    failures: list[str] | None = None

    def line(self, tau: bool) -> str:
        if not self.tasks:
            return "-"
        text = f"{self.plain / self.tasks:.3f}/{self.strict / self.tasks:.3f}"
        return text + (f" τ:{self.tau / self.tasks:.3f}" if tau else "")

    @property
    def worst(self) -> float:
        return min(self.plain, self.strict) / self.tasks if self.tasks else 1.0


def _played(domain: Domain, task: Task, agents: AgentSet, expected: Database, seed: int = 0) -> Episode:
    """One trial of `task`, played to its end in this process (the policy can be asked after)."""
    episode = Episode(TrialSpec(domain, task, 0, trial_seed(seed, domain.name, task.id, 0), agents, expected))
    try:
        episode.play()
    finally:
        episode.close()
    return episode


def score_style(
    domain_name: str,
    policy: AgentSpec | str,
    split: str = "test",
    limit: int | None = None,
    seed: int = 0,
    keep: int = 5,
) -> Score:
    """pass^1 of `policy` (a style's spec, or a built-in policy string) on the domain's tasks:
    plain and strict under castbench grading, plain under tau grading; the first `keep` failures."""
    domain = load_domain(domain_name)
    spec = resolve("policy", policy) if isinstance(policy, str) else policy
    agents = AgentSet(policy=spec, user=resolve("user", "scripted"))
    score = Score(failures=[])
    for task in domain.tasks(split)[:limit]:
        expected = domain.replay(task)
        episode = _played(domain, task, agents, expected, seed)
        record = episode.record()
        grade = record.grade
        score.tasks += 1
        if grade is None:
            continue
        score.plain += grade.reward == 1.0
        score.strict += grade.strict_reward == 1.0
        score.wrote += episode.made_write
        score.strict_wrote += episode.made_write and grade.strict_reward == 1.0
        tau = grade_trial(
            task,
            episode.db,
            expected,
            episode.replies,
            ended_cleanly=grade.surface.ended_cleanly,
            made_write=episode.made_write,
            saw_tool_error=episode.saw_tool_error,
            finished=record.end_reason not in ("max_steps", "agent_error"),
            mode="tau",
            conversation=episode.conversation,
            checks=domain.task_checks(task, episode.db, episode.conversation),
        )
        score.tau += tau.reward == 1.0
        if (grade.reward != 1.0 or grade.strict_reward != 1.0) and len(score.failures or []) < keep:
            why = grade.unearned + [f"missing {m!r}" for m in grade.missing_outputs]
            why += [f"{b.tool}: {b.reason}" for b in grade.policy_breaks]
            why += [f"state: {d.table}.{d.key}.{d.field}" for d in grade.diff[:2]]
            assert score.failures is not None
            score.failures.append(f"{task.id}: {'; '.join(why)[:300]}")
    return score


def skipped_write_causes(domains: Sequence[str], limit: int | None = None) -> dict[str, dict[str, int]]:
    """Per domain, the causes `runs why` (`castbench._results.attribution.rules.attribute`) gives the
    trials of the oracle that leaves out the last write of each task with a write."""
    from castbench._results.attribution.rules import attribute

    spec = _honest_spec("skip-last-write", Style(skip_last_write=True))
    agents = AgentSet(policy=spec, user=resolve("user", "scripted"))
    causes: dict[str, dict[str, int]] = {}
    for name in domains:
        domain = load_domain(name)
        counted = causes[name] = {}
        for task in domain.tasks("test")[:limit]:
            if task.outcome != "change" or not any(domain.toolkit.is_write(c.name) for c in task.actions):
                continue
            attribution = attribute(_played(domain, task, agents, domain.replay(task)).record())
            cause = attribution.cause if attribution is not None else "passed"
            counted[cause] = counted.get(cause, 0) + 1
    return causes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default=",".join(DOMAINS))
    parser.add_argument("--styles", default=",".join([*HONEST_STYLES, *UNCONFIRMED, *SPRAYS]))
    parser.add_argument("--limit", type=int, default=None, help="the first N test tasks of each domain")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--failures", type=int, default=0, help="print the first N failures of each cell")
    parser.add_argument(
        "--skipped-writes", action="store_true", help="only: how runs why explains a skipped write"
    )
    args = parser.parse_args()
    if args.skipped_writes:
        for name, counted in skipped_write_causes(args.domains.split(","), args.limit).items():
            total = sum(counted.values())
            share = counted.get("missing_state_change", 0) / total if total else 1.0
            print(f"{name:14s} missing_state_change {share:6.1%} of {total}: {counted}")
        return
    domains, styles = args.domains.split(","), args.styles.split(",")
    started = time.perf_counter()
    specs: dict[str, AgentSpec | str] = {
        name: (
            _honest_spec(name, HONEST_STYLES[name])
            if name in HONEST_STYLES
            else _honest_spec(name, UNCONFIRMED[name])
            if name in UNCONFIRMED
            else SPRAYS[name]
        )
        for name in styles
    }
    table: dict[str, dict[str, Score]] = {}
    for name, spec in specs.items():
        table[name] = {
            d: score_style(d, spec, limit=args.limit, seed=args.seed, keep=args.failures) for d in domains
        }
    print(f"pass^1 plain/strict (castbench grading), τ: plain, --grading tau; test split, limit {args.limit}")
    print("| style | " + " | ".join(domains) + " |")
    print("|---|" + "---|" * len(domains))
    for name, row in table.items():
        cells = " | ".join(row[d].line(d.startswith("tau")) for d in domains)
        print(f"| {name} | {cells} |")
    unconfirmed = [name for name in table if name in UNCONFIRMED]
    if unconfirmed:
        print(
            "\nstrict pass share of the trials in which an unconfirmed writer's write went through (want 0):"
        )
        for name in unconfirmed:
            row = table[name]
            print(f"  {name:36s} " + "  ".join(f"{d}:{row[d].strict_wrote}/{row[d].wrote}" for d in domains))
    print("\nfalse-fail rate of each honest style (1 - min(plain, strict)):")
    for name, row in table.items():
        if name in HONEST_STYLES:
            print(f"  {name:24s} " + "  ".join(f"{d}:{1 - row[d].worst:.3f}" for d in domains))
    if args.failures:
        for name, row in table.items():
            for d, score in row.items():
                for line in (score.failures or []) if name in HONEST_STYLES else []:
                    print(f"  {name} {d} {line}")
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
