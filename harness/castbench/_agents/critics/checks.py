"""Policy checks that need only what the agent could see: the rules critic ships them. The
privileged labeler (`castbench._grading`) decides with code of its own and shares none of this
(`tests/core/grading/test_labeler_independence.py` holds both directions).

- confirmation (`consent.py`, the critic's own reading, neither the labeler's nor the scripted
  roles' phrasebook `castbench._base.dialogue`): a write needs the user's yes anywhere in their answer
  ("then yes, go ahead"; no refusal), with only tool calls (reads, the other writes of a listed
  batch) and acknowledgements ("I'm on it." -> "Okay.") between it and the write, to agent
  messages since the last earlier write that state what the write changes: its target by id or
  by a description unique among the records the tool results showed, every value it stores anew
  in any format (dates, amounts, numbers and enums in words; not the customer's own user id, not
  what the target already held), the payment method always; an amount the user so accepted
  counts as supported below;
- authentication: tools other than the domain's auth and public tools need an earlier
  successful auth call;
- support: every id-like or numeric argument must appear in the policy document, the domain's
  public catalogue (what its argument-less public look-ups answer on the published data: a
  product list a deployed agent may always read), what the user said or what a tool returned
  (the agent's own words do not count) — else it is a hallucination. An argument the schema
  names as an id (`*_id`, `*_ids`) must be supported whole, digits or not (`dr_garcia_primary`);
  an order number may be said without its `#`. Not checked: the domain's free-text tools
  (`DomainRules.free_text_tools`: a calculation, a note), whose arguments are the agent's own
  arithmetic and words, the numbers given to a look-up (a limit), and the calendar dates given
  to a public look-up (the day to search flights on, often worked out from what the user said:
  "a day later"), which name no record; numbers given to a write (amounts), dates given to a
  write or to a look-up of the customer's data (a birth date), and strings shaped like a date
  that are no date (`1969-08-84`) are checked;
- the call itself: an unknown tool is the wrong tool; arguments the schema rejects are invented.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from castbench._agents.critics.consent import consent, said
from castbench._base.conversation import (
    AgentTurn,
    Event,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench._domain.domain import Domain
from castbench._domain.leaves import leaves
from castbench._domain.rules import ObservedCall, RuleFinding
from castbench._domain.task import ToolCall
from castbench._domain.tools import ToolError

__all__ = ["as_tool_call", "call_findings", "observed_calls", "visible_findings"]

_TOKEN = re.compile(r"[#\w.@-]*\d[#\w.@-]*")
"""An id-like or numeric token: the parts of a free-text argument that must be supported."""


def as_tool_call(action: ToolCallAction) -> ToolCall | None:
    """The action as a ToolCall, or None when its arguments are not a JSON object."""
    if isinstance(action.arguments, str):
        return None
    return ToolCall(name=action.name, arguments=dict(action.arguments))


def observed_calls(conversation: Sequence[Event]) -> list[ObservedCall]:
    calls: list[ObservedCall] = []
    pending: dict[str, ToolCallAction] = {}
    for event in conversation:
        if isinstance(event, AgentTurn) and isinstance(event.action, ToolCallAction) and event.call_id:
            pending[event.call_id] = event.action
        elif isinstance(event, ToolResultTurn) and event.call_id in pending:
            action = pending.pop(event.call_id)
            arguments = action.arguments if isinstance(action.arguments, dict) else {}
            calls.append(ObservedCall(action.name, dict(arguments), event.content, event.error))
    return calls


def _id_tokens(value: Any) -> set[str]:
    """The id-like or numeric tokens of an argument value, lowercased."""
    found: set[str] = set()
    for item in leaves(value):
        if isinstance(item, str):
            found.update(token.strip(".-") for token in _TOKEN.findall(item.lower()))
        elif isinstance(item, int | float) and not isinstance(item, bool):
            found.add(str(item))
    return {token for token in found if len(token) >= 2}


_PROSE_ID = re.compile(r"^#?(?=[\w@.]*[a-z_])(?=[\w@.]*\d)[\w@.]+$|^#?\d{5,}$")
"""In prose, what names a record: a token of letters and digits without a hyphen (`HAT229`,
`amelia_sanchez_4739`, `#W2378156`) or a long number; not a date, a figure or "24-hour"."""
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_CLOCK = re.compile(r"^([01]?\d|2[0-3]):[0-5]\d$")
_MONTHS = [name.lower() for name in calendar.month_name[1:]]


def _is_calendar_date(token: str) -> bool:
    """An ISO date that is a day of the calendar (`2024-05-19`, not `1969-08-84`)."""
    if _ISO_DATE.match(token) is None:
        return False
    try:
        date.fromisoformat(token)
    except ValueError:
        return False
    return True


def _forms(token: str) -> set[str]:
    """Ways a user may have said a token: an ISO date also as 'May 22', '22nd of May', '22 May',
    '5/22/2026'; a time of day as itself inside the text ("at 11:00 am")."""
    match = _ISO_DATE.match(token)
    if match is None:
        return {token}
    year, month, day = match.group(1), int(match.group(2)), int(match.group(3))
    name = _MONTHS[month - 1] if 1 <= month <= 12 else "?"
    nth = f"{day}{'th' if 11 <= day <= 13 else {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th')}"
    return {
        token,
        f"{nth} of {name}",
        f"{nth} {name}",
        f"{name} {day}",
        f"{name[:3]} {day}",
        f"{day} {name}",
        f"{day} {name[:3]}",
        f"{month}/{day}/{year}",
        f"{month:02d}/{day:02d}/{year}",
    }


_CATALOGUES: dict[tuple[str, str], str] = {}


def _catalogue(domain: Domain) -> str:
    """What the domain's argument-less public look-ups answer on its published data (worked out
    once per domain version): public knowledge, like the policy document."""
    key = (domain.name, domain.version)
    if key not in _CATALOGUES:
        rules, db = domain.rules, domain.fresh_database()
        _CATALOGUES[key] = " ".join(
            domain.toolkit.call(db, tool.name, {}).content
            for tool in domain.toolkit
            if tool.name in rules.public_tools
            and not tool.writes
            and not tool.schema["function"].get("parameters", {}).get("properties")
        )
    return _CATALOGUES[key]


class _Support:
    """What may justify a value: the policy document (prices, today's date), the public catalogue,
    what the user said and what tools returned — never the agent's own words. Tokens match whole
    (a truncated id is not supported by the full one); dates may also match as the user said
    them; an order number with or without its leading `#`."""

    def __init__(
        self, public: str, conversation: Sequence[Event], accepted: frozenset[Decimal] = frozenset()
    ) -> None:
        self.accepted = accepted
        """Amounts the agent proposed and the user accepted (the agent's own arithmetic, agreed)."""
        parts = [public] + [
            event.text if isinstance(event, UserTurn) else event.content
            for event in conversation
            if isinstance(event, UserTurn | ToolResultTurn) and not getattr(event, "error", False)
        ]
        self.text = " ".join(parts).lower()
        self.tokens = {token.strip(".-") for token in _TOKEN.findall(self.text)}
        self.tokens |= {token.lstrip("#") for token in self.tokens}

    def has(self, token: str) -> bool:
        return (
            token in self.tokens
            or token.lstrip("#") in self.tokens
            or any(form in self.text for form in _forms(token) - {token})
        )

    def has_time(self, value: str) -> bool:
        """A time of day as said: "11:00", "11 am", "3:30 pm" for 15:30."""
        hour, minute = (int(part) for part in value.split(":"))
        half = "am" if hour < 12 else "pm"
        twelve = hour % 12 or 12
        spoken = [
            f"{hour}:{minute:02d}",
            f"{hour:02d}:{minute:02d}",
            f"{twelve}:{minute:02d} {half}",
            f"{twelve}:{minute:02d}{half}",
        ]
        if minute == 0:
            spoken += [f"{twelve} {half}", f"{twelve}{half}", f"{twelve} o'clock"]
        return any(re.search(rf"(?<![\d:]){re.escape(form)}(?![\d:])", self.text) for form in spoken)

    def has_whole(self, value: str) -> bool:
        """The whole value appears as a word of its own (an id without digits: `dr_lee_derm`)."""
        pattern = rf"(?<![\w#@.-])#?{re.escape(value.lower().lstrip('#'))}(?![\w@-])"
        return re.search(pattern, self.text) is not None

    def supports(self, value: Any, *, numbers: bool = True, dates: bool = True, whole: bool = False) -> bool:
        """`numbers`: numbers must be supported too; `dates`: calendar dates too; `whole`: the
        value as a word of its own."""
        if isinstance(value, bool) or value is None:
            return True
        if isinstance(value, int | float):
            if not numbers:
                return True
            forms = {str(value), f"{value:.2f}"}
            if float(value).is_integer():
                forms.add(str(int(value)))
            return (
                value == 0
                or any(form in self.tokens for form in forms)
                or Decimal(str(value)).normalize() in self.accepted
            )
        if isinstance(value, str):
            if _CLOCK.match(value.strip()):
                return self.has_time(value.strip())
            if whole and value.strip() and not self.has_whole(value.strip()):
                return False
            tokens = [token.strip(".-") for token in _TOKEN.findall(value.lower())]
            if len(value.split()) > 4:  # prose (a summary for a human agent): only the ids in it
                tokens = [token for token in tokens if _PROSE_ID.match(token)]
            return all(
                self.has(token)
                for token in tokens
                if len(token) >= 2 and (dates or not _is_calendar_date(token))
            )
        return True


def visible_findings(domain: Domain, call: ToolCall, conversation: Sequence[Event]) -> list[RuleFinding]:
    """Every rule break of `call` that the visible conversation shows (no privileged data)."""
    toolkit = domain.toolkit
    if call.name not in toolkit:
        return [RuleFinding("wrong_tool", f"'{call.name}' is not a tool of this domain")]
    try:
        toolkit.validate(call.name, call.arguments)
    except ToolError as exc:
        return [RuleFinding("hallucination", str(exc).removeprefix("Error: "))]
    findings: list[RuleFinding] = []
    rules = domain.rules
    observed = observed_calls(conversation)
    needs_auth = rules.auth_tools and call.name not in rules.auth_tools | rules.public_tools
    if needs_auth and not any(seen.name in rules.auth_tools and not seen.error for seen in observed):
        findings.append(RuleFinding("domain_violation", "the user has not been authenticated yet"))
    write_tools = frozenset(tool.name for tool in toolkit if tool.writes)
    accepted: frozenset[Decimal] = frozenset()
    if call.name in write_tools:
        reading = consent(conversation, write_tools, call)
        if reading.confirmed:
            accepted = said(reading.proposal).numbers
        else:
            findings.append(
                RuleFinding("domain_violation", "no explicit confirmation from the user for this change")
            )
    support = _Support(f"{domain.policy} {_catalogue(domain)}", conversation, accepted)
    enums = {
        name
        for name, spec in toolkit[call.name].schema["function"]["parameters"].get("properties", {}).items()
        if "enum" in spec
    }
    checked = {} if call.name in rules.free_text_tools else call.arguments
    writes = call.name in write_tools
    dates = writes or call.name not in rules.public_tools
    for name, value in checked.items():
        if name in enums:
            continue
        whole = name.endswith(("_id", "_ids"))
        unsupported = [
            item
            for item in leaves(value)
            if not support.supports(item, numbers=writes, dates=dates, whole=whole)
        ]
        if unsupported:
            findings.append(
                RuleFinding(
                    "hallucination",
                    f"argument '{name}' uses {unsupported[0]!r}, which nothing so far supports",
                )
            )
    findings.extend(rules.visible_findings(call, observed))
    return findings


def call_findings(domain: Domain, action: ToolCallAction, conversation: Sequence[Event]) -> list[RuleFinding]:
    """`visible_findings` for an action whose arguments may not even be JSON."""
    call = as_tool_call(action)
    if call is None:
        if action.name not in domain.toolkit:
            return [RuleFinding("wrong_tool", f"'{action.name}' is not a tool of this domain")]
        return [RuleFinding("hallucination", "the arguments are not a JSON object")]
    return visible_findings(domain, call, conversation)
