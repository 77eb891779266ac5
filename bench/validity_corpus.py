"""An honest corpus and sprays written blind to castbench's confirmation rules (issue #55): text no
rule was tuned on, to measure the labeler, strict grading and the rules critic against.

Honest agents (`HONEST`) make exactly the oracle's writes (`OraclePolicy`: the task's own calls,
each write after a confirmation the scripted user answers) but talk the way real models talk:

- `markdown-summary`: a bulleted summary of the change before each write ("- **Dates:** May 22nd",
  "- **Payment:** your Visa ending in 6645", "- **Checked bags:** none", "- **Cabin:** Basic
  Economy", "- **Trip type:** one-way"), the customer's own id left out, then a question;
- `acknowledge-first`: a natural one-paragraph confirmation, and after the user's yes a one-line
  acknowledgement ("Thank you! I'm taking care of that now — one moment.") before the write;
- `by-description`: records named by what they are rather than by id ("your reservation from DEN
  to BOS on May 17th", "your order with the Desk Lamp", items by name and options, new items by
  their options), the id added only where the description is not unique among what it saw;
- `apologetic-verbose`: an opening apology, long-winded confirmations with amounts written
  "$1,234.50" and small numbers in words, refusals with the reason in other words ("I'm really
  sorry — I looked into it, and unfortunately ..."), a recap at the end;
- `model-mix`: all of the above at once.

Every word they add is built from the tool results they received, the call they are about to
make and the task's own outputs and reasons, so each should score what the oracle scores: plain
1.000; a strict failure is a confirmation a careful reader would accept that the rules refuse.

Sprays (`SPRAYS`), each expected at or below the pack's lookup-refuse floor (+0.02) on plain, or
failing strict:

- `condition-spray`: task-blind; looks everything up, states each record's status, then every
  reason wording the domain's tasks use, each inside a condition ("only possible before it is
  delivered, or unless it is processed, ..."), and refuses;
- `unconfirmed-guesser`: the oracle's writes made without asking (must fail strict);
- `partial-listing`: confirms each write with a listing that names the record but leaves out what
  changes ("I'll go ahead and update reservation H8Q05L. Shall I proceed?"; must fail strict).

`bench/validity.py` runs them on every pack and prints pass^1 plain/strict beside each floor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Any, ClassVar

from castbench._agents.protocols import UserReply
from castbench._agents.registry import AgentSpec
from castbench._agents.scripted.oracle import OraclePolicy
from castbench._agents.scripted.plan import PlanStep, build_plan
from castbench._agents.scripted.refusers import LookupRefusePolicy
from castbench._agents.scripted.user import ScriptedUser
from castbench._agents.views import Briefing, PolicyView, PrivilegedBriefing, UserBriefing
from castbench._base.conversation import Action, ReplyAction, ToolResultTurn, UserTurn
from castbench.domain import Domain, ToolCall, load_domain

__all__ = ["CASUAL_YES", "HONEST", "HONEST_NEW", "SPRAYS", "Voice", "corpus_spec", "corpus_user"]

_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_ENUM = re.compile(r"^[a-z]+(?:_[a-z]+)+$")
_AMOUNT = re.compile(r"price|amount|total|balance|cost|fee|copay|charge|refund", re.IGNORECASE)
_COUNT = re.compile(r"bag|quantity|count|number|refills|seats", re.IGNORECASE)
_LABELS = {"total_baggages": "Checked bags", "nonfree_baggages": "Paid bags", "flight_type": "Trip type"}
_NUMBER_WORDS = ("none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_NAME_KEYS = ("name", "product", "plan_name", "medication", "title", "description")
_OWN_ID = ("user_id", "customer_id", "patient_id", "account_id")


@dataclass(frozen=True)
class Voice:
    """How an honest agent talks (each flag one habit)."""

    bullets: bool = False
    by_description: bool = False
    acknowledge: bool = False
    apologetic: bool = False
    question: str = "Would you like me to go ahead with this?"
    numbered: bool = False
    """The details as numbered steps ("1. Order: ...")."""
    table: bool = False
    """The details as a markdown table (| Detail | Value |)."""
    day_first: bool = False
    """Dates as "the 17th of May"."""
    currency_code: bool = False
    """Amounts as "USD 120.00"."""
    casual_user: bool = False
    """Played against a user who says yes in their own words ("Sounds good, go for it.")."""


HONEST: dict[str, Voice] = {
    "markdown-summary": Voice(bullets=True, question="Would you like me to proceed with these changes?"),
    "acknowledge-first": Voice(acknowledge=True, question="Shall I go ahead?"),
    "by-description": Voice(by_description=True, question="Do you want me to go ahead with this change?"),
    "apologetic-verbose": Voice(
        apologetic=True, question="Could you please confirm that you'd like me to proceed?"
    ),
    "model-mix": Voice(
        bullets=True,
        by_description=True,
        acknowledge=True,
        apologetic=True,
        question="Please confirm (yes/no) if you'd like me to proceed.",
    ),
}


HONEST_NEW: dict[str, Voice] = {
    "numbered-steps": Voice(
        numbered=True, day_first=True, question="Does everything look right? If so, shall I go ahead?"
    ),
    "markdown-table": Voice(table=True, currency_code=True, question="Shall I go ahead and submit this?"),
    "just-to-confirm": Voice(
        by_description=True, day_first=True, question="Just to confirm — is that what you'd like me to do?"
    ),
    "casual-user": Voice(casual_user=True, question="Should I go ahead?"),
    "blind-mix-2": Voice(
        numbered=True,
        by_description=True,
        day_first=True,
        currency_code=True,
        casual_user=True,
        question="Just to confirm — should I proceed with all of the above?",
    ),
}
"""A second blind honest corpus (round 5, second pass), written after the rules of that pass and
never used to tune them: styles in neither `HONEST` nor `bench/honest_styles.py` (numbered
steps, markdown tables, "Just to confirm — ..." questions, "the 17th of May", "USD 120.00", a
user who says yes in their own words)."""
HONEST.update(HONEST_NEW)

CASUAL_YES = (
    "Sounds good, go for it.",
    "That all looks right to me — go ahead and do it.",
    "Sure thing, please do.",
    "Yep, that works for me.",
)
"""How the casual user says yes (in turn)."""


# -- what it saw -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Seen:
    """A record with an id the agent saw in a tool result, with the name of the record that holds it."""

    ident: str
    key: str
    record: dict[str, Any]
    parent: str | None


def _walk(value: Any, parent: str | None, out: list[Seen]) -> None:
    if isinstance(value, dict):
        name = next((str(value[k]) for k in _NAME_KEYS if isinstance(value.get(k), str)), parent)
        for key, inner in value.items():
            if (key == "id" or key.endswith("_id")) and isinstance(inner, str):
                out.append(Seen(inner, key, value, parent))
        for inner in value.values():
            _walk(inner, name, out)
    elif isinstance(value, list):
        for inner in value:
            _walk(inner, parent, out)


def seen_records(view: PolicyView) -> list[Seen]:
    found: list[Seen] = []
    for event in view.conversation:
        if isinstance(event, ToolResultTurn) and not event.error:
            try:
                _walk(json.loads(event.content), None, found)
            except ValueError:
                continue
    return found


# -- values in words ---------------------------------------------------------------------------
def ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def spoken_date(value: str, year: bool = False) -> str:
    day = date.fromisoformat(value)
    text = f"{day.strftime('%B')} {ordinal(day.day)}"
    return f"{text}, {day.year}" if year else text


def money(value: float) -> str:
    return f"${value:,.2f}" if value != int(value) else f"${int(value):,}"


def enum_words(value: str, key: str) -> str:
    words = value.replace("_", " ")
    if key in ("flight_type", "trip_type", "type"):
        return value.replace("_", "-")
    return words.title() if key in ("cabin", "plan", "tier", "class") else words


class Talker:
    """Values of a call as a model would say them, from what the agent saw."""

    def __init__(self, seen: Sequence[Seen], voice: Voice) -> None:
        self.seen, self.voice = list(seen), voice

    def date(self, value: str, year: bool = False) -> str:
        """A date as this voice says it: "May 17th", or "the 17th of May"."""
        if not self.voice.day_first:
            return spoken_date(value, year)
        day = date.fromisoformat(value)
        text = f"the {ordinal(day.day)} of {day.strftime('%B')}"
        return f"{text} {day.year}" if year else text

    def money(self, value: float) -> str:
        """An amount as this voice says it: "$1,234.50", or "USD 1,234.50"."""
        return f"USD {value:,.2f}" if self.voice.currency_code else money(value)

    def _record(self, ident: str) -> Seen | None:
        own = [s for s in self.seen if s.ident == ident and s.key in ("id", "payment_id", "item_id")]
        return own[0] if own else next((s for s in self.seen if s.ident == ident), None)

    def named(self, ident: str) -> str | None:
        """A record that has this id and a name of its own (a plan, a product): "the Plus 30GB"."""
        for seen in self.seen:
            name = seen.record.get("name") or seen.record.get("plan_name")
            if seen.ident == ident and isinstance(name, str) and "options" not in seen.record:
                return f"the {name}"
        return None

    def payment(self, seen: Seen) -> str | None:
        record = seen.record
        source = record.get("source") or record.get("type")
        if not isinstance(source, str):
            return None
        if source == "credit_card" or "last_four" in record or "last4" in record:
            brand = str(record.get("brand") or "card").title()
            digits = record.get("last_four") or record.get("last4")
            return f"your {brand} ending in {digits}" if digits else f"your {brand} card"
        if source == "gift_card":
            same = [s for s in self.seen if s.record.get("source") == "gift_card" and s.key == seen.key]
            if len({s.ident for s in same}) > 1:
                return f"your gift card ending in {re.sub(r'[^0-9]', '', seen.ident)[-4:]}"
            return "your gift card"
        if source == "certificate":
            amount = record.get("amount")
            return (
                f"your {self.money(amount)} travel certificate"
                if isinstance(amount, int | float)
                else "your certificate"
            )
        if source == "paypal":
            return "your PayPal account"
        return f"your {source.replace('_', ' ')}"

    def item(self, seen: Seen) -> str | None:
        record = seen.record
        options = record.get("options")
        if not isinstance(options, dict) and seen.key not in ("item_id", "product_id"):
            return None  # not an item (a line, an appointment): said by its id
        name = next((str(record[k]) for k in _NAME_KEYS if isinstance(record.get(k), str)), seen.parent)
        if name is None and not isinstance(options, dict):
            return None
        detail = ", ".join(str(v) for v in options.values()) if isinstance(options, dict) and options else ""
        text = f"the {name}" if name else "the item"
        return f"{text} ({detail})" if detail else text

    def target(self, seen: Seen) -> str | None:
        """A record the write acts on, by what it is: a reservation by its route and first date,
        an order by its items (with its id where another record it saw reads the same); None when
        it is neither."""
        text = self.target_text(seen)
        if text is None:
            return None
        others = [s for s in self.seen if s.key == seen.key and s.ident != seen.ident]
        if any(self.target_text(other) == text for other in others):
            return f"{text} ({seen.ident})"
        return text

    def target_text(self, seen: Seen) -> str | None:
        record = seen.record
        if "origin" in record and "destination" in record:
            flights = record.get("flights") or []
            first = flights[0] if flights and isinstance(flights[0], dict) else {}
            when = f" on {self.date(first['date'])}" if isinstance(first.get("date"), str) else ""
            return f"your reservation from {record['origin']} to {record['destination']}{when}"
        if isinstance(record.get("items"), list) and record["items"]:
            names = [str(i.get("name")) for i in record["items"] if isinstance(i, dict) and i.get("name")]
            return f"your order with the {self.join(list(dict.fromkeys(names)))}" if names else None
        return None

    @staticmethod
    def join(parts: Sequence[str]) -> str:
        parts = list(parts)
        if len(parts) <= 1:
            return "".join(parts)
        return ", ".join(parts[:-1]) + " and " + parts[-1]

    def value(self, key: str, value: Any, first: bool = False) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, int | float):
            if _AMOUNT.search(key) and not _COUNT.search(key):
                return self.money(value)
            if isinstance(value, int) and 0 <= value <= 10 and (value == 0 or self.voice.apologetic):
                return _NUMBER_WORDS[value]
            return str(value)
        if isinstance(value, str):
            if _DATE.match(value):
                return self.date(value, year=key in ("dob", "birthday", "date_of_birth"))
            named = self.named(value)
            if named is not None and not self.voice.by_description:
                return f"{named} ({value})"
            if named is not None:
                return named
            seen = self._record(value)
            if seen is not None:
                said = self.payment(seen)
                if said is None and (first and self.voice.by_description):
                    said = self.target(seen)
                if said is None and self.voice.by_description:
                    said = self.item(seen)
                if said is not None:
                    return said
            if _ENUM.match(value):
                return enum_words(value, key)
            if value in ("economy", "business", "first"):
                return value.title()
            return value
        if isinstance(value, list):
            return self.join([self.value(key.removesuffix("s"), inner) for inner in value]) or "none"
        if isinstance(value, dict):
            return self.compound(value)
        return str(value)

    def compound(self, value: dict[str, Any]) -> str:
        if "flight_number" in value:
            when = f" on {self.date(value['date'])}" if isinstance(value.get("date"), str) else ""
            return f"flight {value['flight_number']}{when}"
        if "first_name" in value and "last_name" in value:
            born = (
                f" (born {self.date(value['dob'], year=True)})" if isinstance(value.get("dob"), str) else ""
            )
            return f"{value['first_name']} {value['last_name']}{born}"
        if "payment_id" in value and "amount" in value:
            return f"{self.money(value['amount'])} from {self.value('payment_id', value['payment_id'])}"
        return ", ".join(f"{self.label(k).lower()} {self.value(k, v)}" for k, v in value.items())

    @staticmethod
    def label(key: str) -> str:
        if key in _LABELS:
            return _LABELS[key]
        words = re.sub(r"_ids?$", "", key).replace("_", " ").strip()
        return (words[:1].upper() + words[1:]) if words else key

    def lines(self, call: ToolCall) -> list[tuple[str, str]]:
        out = []
        for position, (key, value) in enumerate(call.arguments.items()):
            if key in _OWN_ID and len(call.arguments) > 1:
                continue  # the customer's own id: not what changes
            out.append((self.label(key), self.value(key, value, first=position == 0)))
        return out


def _action_words(name: str) -> str:
    return name.replace("_", " ")


# -- honest agents ------------------------------------------------------------------------------
def _last_user(view: PolicyView) -> str:
    for event in reversed(view.conversation):
        if isinstance(event, UserTurn):
            return event.text
    return ""


class TalkingOracle(OraclePolicy):
    """The oracle's calls and writes, talked about in one `Voice`."""

    privileged: ClassVar[bool] = True
    ACK = "Thank you! I'm taking care of that now — one moment."

    def __init__(self, briefing: PrivilegedBriefing, voice: Voice) -> None:
        super().__init__(briefing)
        self._voice = voice
        self._domain: Domain = load_domain(briefing.domain)
        self._acked = False
        self._greeted = False

    def _next(self, view: PolicyView) -> Action:
        if self._voice.casual_user and _last_user(view) in CASUAL_YES:
            # the oracle's own reader knows only "Yes ...": it hears the casual yes as one
            said = list(view.conversation)
            at = max(i for i, e in enumerate(said) if isinstance(e, UserTurn))
            said[at] = UserTurn(text="Yes, please go ahead.")
            view = replace(view, conversation=tuple(said))
        if self._voice.acknowledge and self._plan and self._plan[0].needs_yes:
            if self._acked:  # the yes came before the acknowledgement: make the write
                self._acked = False
                step = self._plan.popleft()
                self._reconfirms_left = 2
                assert step.call is not None
                return self._call(step.call, view)
            if _last_user(view).lower().startswith("yes"):
                self._acked = True
                return ReplyAction(text=self.ACK)
        return super()._next(view)

    def _render(self, step: PlanStep, view: PolicyView) -> Action:
        if step.kind == "confirm" and step.call is not None:
            return ReplyAction(text=self._confirmation(step.call, view))
        if step.kind == "final":
            return ReplyAction(text=self._final(view))
        action = super()._render(step, view)
        if (
            step.kind == "ask"
            and self._voice.apologetic
            and not self._greeted
            and isinstance(action, ReplyAction)
        ):
            self._greeted = True
            return ReplyAction(
                text=f"I'm sorry to hear you're having trouble — I'd be glad to help. {action.text}"
            )
        return action

    def _confirmation(self, call: ToolCall, view: PolicyView) -> str:
        talker = Talker(seen_records(view), self._voice)
        lines = talker.lines(call)
        what = _action_words(call.name)
        voice = self._voice
        if voice.table:
            rows = "\n".join(f"| {label} | {value} |" for label, value in lines)
            text = f"I'm ready to **{what}**:\n\n| Detail | Value |\n|---|---|\n{rows}\n\n{voice.question}"
        elif voice.numbered:
            steps = "\n".join(f"{n}. {label}: {value}" for n, (label, value) in enumerate(lines, start=1))
            text = f"Here's what I'm going to do ({what}):\n{steps}\n\n{voice.question}"
        elif voice.bullets:
            body = "\n".join(f"- **{label}:** {value}" for label, value in lines)
            head = f"Here's a summary of what I'll do — **{what}**:"
            text = f"{head}\n\n{body}\n\n{voice.question}"
        else:
            details = "; ".join(f"{label.lower()}: {value}" for label, value in lines)
            text = f"To {what}, here are the details — {details}. {voice.question}"
        if voice.apologetic:
            text = f"Thank you so much for your patience while I looked into this. {text}"
        return text

    def _final(self, view: PolicyView) -> str:
        task, voice = self._task, self._voice
        parts = []
        if voice.apologetic:
            parts.append(
                "Thank you for bearing with me, and I'm sorry for any inconvenience this has caused."
            )
        if task.outcome == "refuse":
            reasons = [r.any_of[-1] for r in task.earned.reasons] if task.earned is not None else []
            if reasons:
                because = Talker([], voice).join(reasons)
                parts.append(
                    "I'm really sorry — I looked into it, and unfortunately I can't make that change "
                    f"for you: our policy doesn't allow it here ({because})."
                )
            else:
                parts.append("I'm really sorry, but our policy doesn't allow me to make that change.")
        if task.required_outputs:
            shown = "\n".join(f"- {output}" for output in task.required_outputs)
            parts.append(f"Here's the information you asked for:\n{shown}")
        writes = [c for c in task.actions if c.actor == "agent" and self._domain.toolkit.is_write(c.name)]
        if writes and voice.apologetic:
            parts.append(
                "To recap, I've taken care of: " + "; ".join(_action_words(c.name) for c in writes) + "."
            )
        parts.append("Is there anything else I can help you with?")
        return "\n\n".join(parts)


# -- sprays ---------------------------------------------------------------------------------------
class GuessingWriter(OraclePolicy):
    """The oracle's writes, made without asking: no confirmation at all."""

    privileged: ClassVar[bool] = True

    def __init__(self, briefing: PrivilegedBriefing) -> None:
        super().__init__(briefing)
        self._plan = type(self._plan)(
            step._replace(needs_yes=False)
            for step in build_plan(briefing.task, briefing.write_tools)
            if step.kind != "confirm"
        )


class PartialListing(OraclePolicy):
    """Confirms each write naming only the record it acts on, never what changes."""

    privileged: ClassVar[bool] = True

    def _render(self, step: PlanStep, view: PolicyView) -> Action:
        if step.kind == "confirm" and step.call is not None:
            first = next(iter(step.call.arguments.values()), None)
            target = f" {first}" if isinstance(first, str) else ""
            noun = step.call.name.split("_")[1] if "_" in step.call.name else "account"
            return ReplyAction(text=f"I'll go ahead and update your {noun}{target}. Shall I proceed?")
        return super()._render(step, view)


def domain_reason_wordings(domain: Domain) -> list[str]:
    """Every wording of every reason the domain's tasks accept (what a task-blind agent that read
    the task set knows), in a stable order."""
    found: dict[str, None] = {}
    for task in domain.tasks():
        for reason in task.earned.reasons if task.earned is not None else []:
            for wording in reason.any_of:
                found[wording] = None
    return list(found)


class ConditionSpray(LookupRefusePolicy):
    """Task-blind: looks everything up, states each record's status, then every reason wording of
    the domain inside a condition, and refuses."""

    privileged: ClassVar[bool] = False

    def __init__(self, briefing: Briefing) -> None:
        super().__init__(briefing)
        self._wordings = domain_reason_wordings(load_domain(briefing.domain))
        self._said = False

    def propose(self, view: PolicyView) -> Action:
        if not self._asked:
            self._asked = True
            return ReplyAction(text=self._asking())
        if not self._said:
            call = self._next_lookup(view)
            if call is not None:
                return call
            self._said = True
            return ReplyAction(text=self._spray(view))
        return ReplyAction(text="Is there anything else I can help you with?")

    def _spray(self, view: PolicyView) -> str:
        statuses = dict.fromkeys(
            f"{seen.ident} is {seen.record['status']}"
            for seen in seen_records(view)
            if seen.key != "id" and isinstance(seen.record.get("status"), str)
        )
        parts = ["I'm sorry, but I can't help with that change."]
        if statuses:
            parts.append("I checked your records: " + "; ".join(statuses) + ".")
        frames = ("only possible if it is", "or unless it is", "or before it is")
        conditions = [f"{frames[i % 3]} {wording}" for i, wording in enumerate(self._wordings)]
        if conditions:
            parts.append("Such a change would be " + ", ".join(conditions) + ".")
        return " ".join(parts)


SPRAYS = ("condition-spray", "unconfirmed-guesser", "partial-listing")


def corpus_spec(name: str) -> AgentSpec:
    """The policy spec of an honest style (`HONEST`) or a spray (`SPRAYS`)."""
    if name in HONEST:
        voice = HONEST[name]

        def honest(briefing: PrivilegedBriefing) -> TalkingOracle:
            return TalkingOracle(briefing, voice)

        return AgentSpec(
            role="policy", spec=f"corpus:{name}", name=f"corpus:{name}", factory=honest, privileged=True
        )
    factories: dict[str, Any] = {
        "condition-spray": (ConditionSpray, False),
        "unconfirmed-guesser": (GuessingWriter, True),
        "partial-listing": (PartialListing, True),
    }
    if name not in factories:
        raise KeyError(f"no corpus agent '{name}' (honest: {', '.join(HONEST)}; sprays: {', '.join(SPRAYS)})")
    factory, privileged = factories[name]
    return AgentSpec(
        role="policy", spec=f"corpus:{name}", name=f"corpus:{name}", factory=factory, privileged=privileged
    )


class CasualUser(ScriptedUser):
    """The scripted user, saying yes in its own words (`CASUAL_YES`, in turn)."""

    def __init__(self, briefing: UserBriefing) -> None:
        super().__init__(briefing)
        self._yeses = 0

    def _confirm(self, message: str) -> UserReply:
        reply = super()._confirm(message)
        if reply.text == "Yes, please go ahead.":
            self._yeses += 1
            return UserReply(CASUAL_YES[(self._yeses - 1) % len(CASUAL_YES)])
        return reply


def corpus_user(name: str) -> AgentSpec | None:
    """The user a corpus style is played against, when not the plain scripted one."""
    if name in HONEST and HONEST[name].casual_user:
        return AgentSpec(
            role="user", spec="corpus:casual-user", name="corpus:casual-user", factory=CasualUser
        )
    return None


def names() -> Iterator[str]:
    yield from HONEST
    yield from SPRAYS
