"""Who a published task's customer is, as the customer would say it: the scripted user's identity
facts. Shared by the packs of published benchmarks whose tasks name a customer but say nothing of
what they tell the agent (τ-Bench and τ-Trait in `castbench_tau`, τ² in `castbench_tau2`).


τ's policies make the agent authenticate the customer with an identity look-up (`find_*`: by
email, by name and zip code, by name and date of birth, by phone) before anything else. The
facts the scripted user gives when asked are the arguments of one such look-up that *finds the
task's own customer* (τ's `user_id` for the task), so that an agent that asks, and the oracle,
can authenticate as the policy requires:

1. the gold's first identity look-up that finds the customer (the gold's own choice, so the user
   says what τ's annotators had the agent look up);
2. else one built from the customer's record in τ's data (a look-up argument is the record's
   field of the same name, at any depth: `email`, `name.first_name`, `address.zip`,
   `demographics.date_of_birth`), preferring the look-up whose values the instruction mentions,
   and kept only if it finds the customer. This covers golds that look nobody up (retail test
   70-114, telehealth test 0 and 2) and golds whose first look-ups fail on purpose (retail test
   35-39, 54, 55, 67, 68: a second email, an old zip code, a mistyped zip);
3. a pack with no identity look-up (airline: the customer gives their user id) keeps the gold's
   first `get_*` whose only argument is the customer's id.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from castbench._domain.task import Fact, ToolCall
from castbench._domain.tools import Observation

__all__ = ["IDENTITY_ARGUMENTS", "IDENTITY_PREFIX", "Finder", "identity_call", "identity_facts"]

IDENTITY_PREFIX = "find_"
"""τ's look-ups of who the customer is (`find_user_id_by_email`, `find_user_id_by_name_zip`, ...)."""
IDENTITY_ARGUMENTS = ("user_id", "customer_id", "patient_id")

Finder = tuple[str, tuple[str, ...]]
"""An identity look-up tool: its name and its required arguments."""
_MONTHS = tuple(name.lower() for name in calendar.month_name[1:])


def _field(record: Any, name: str) -> Any:
    """The first value stored under `name` in the record, searching nested objects breadth-first."""
    queue = [record]
    while queue:
        item = queue.pop(0)
        if isinstance(item, Mapping):
            if name in item and not isinstance(item[name], Mapping | list):
                return item[name]
            queue.extend(value for value in item.values() if isinstance(value, Mapping))
    return None


def _spoken_forms(value: str) -> Iterator[str]:
    """How an instruction may write a value: as is, a date also as 'March 15, 1985'."""
    yield value.lower()
    match = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", value)
    if match is not None and 1 <= int(match.group(2)) <= 12:
        month, day, year = _MONTHS[int(match.group(2)) - 1], int(match.group(3)), match.group(1)
        yield f"{month} {day}, {year}"
        yield f"{month} {day} {year}"
        yield f"{day} {month} {year}"


def _mentioned(value: str, instruction: str) -> bool:
    text = " ".join(instruction.lower().split())
    if any(form in text for form in _spoken_forms(value)):
        return True
    digits = re.sub(r"\D", "", value)  # a phone number, however it is punctuated
    return len(digits) >= 7 and len(digits) >= len(value) - 6 and digits in re.sub(r"\D", "", text)


def identity_call(
    user_id: str,
    instruction: str,
    actions: Sequence[ToolCall],
    finders: Sequence[Finder],
    record: Mapping[str, Any] | None,
    run: Callable[[ToolCall], Observation],
) -> ToolCall | None:
    """The identity look-up whose arguments the customer gives (see the module docstring).
    `record` is the customer's row in τ's data (None when the id names no row); `run` calls a
    tool on the pristine state."""

    def finds(call: ToolCall) -> bool:
        observation = run(call)
        return not observation.error and user_id in observation.content

    if not finders:
        for call in actions:
            if call.name.startswith("get_") and list(call.arguments) in ([key] for key in IDENTITY_ARGUMENTS):
                return call
        return None
    gold = next((call for call in actions if call.name.startswith(IDENTITY_PREFIX) and finds(call)), None)
    if gold is not None or record is None:
        return gold
    built: list[tuple[float, int, ToolCall]] = []
    for order, (name, arguments) in enumerate(finders):
        values = {argument: _field(record, argument) for argument in arguments}
        if not values or any(not isinstance(value, str) for value in values.values()):
            continue
        said = sum(_mentioned(value, instruction) for value in values.values())
        built.append((-said / len(values), order, ToolCall(name=name, arguments=values)))
    return next((call for _, _, call in sorted(built, key=lambda item: item[:2]) if finds(call)), None)


def identity_facts(call: ToolCall | None) -> list[Fact]:
    """The call's arguments as facts the scripted user gives when asked ("My email is ...")."""
    if call is None:
        return []
    facts = []
    for name, value in call.arguments.items():
        spoken = name.replace("_", " ")
        facts.append(
            Fact(name=name, value=str(value), keywords=[spoken], statement=f"My {spoken} is {value}.")
        )
    return facts
