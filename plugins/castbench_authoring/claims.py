"""False claims from a task's own data: what the records a task is *not* about say.

A task-blind agent that reads every record it can reach and repeats every value states the
customer's other orders' totals, their other reservations' flights and ids. An agent answering
the task has no reason to: those values are claims about records the user did not ask about, and
a reply that makes them fails the earned check (`castbench._grading.earned`) like a false reason.
This module finds them for any task set whose tools look records up by id (castbench's generated
domains and the τ packs alike): starting from what the ground truth's reads return, it follows
every id they name (under `<x>_id`, or listed under `<x>s` or `<x>_ids`: `listed_argument`)
with the one-argument look-up for that id, up to `depth` hops, skipping the records the ground
truth reads itself. The records reached through a list (the customer's other orders,
reservations, lines) are the ones the task
is not about; of their values it keeps two kinds that honest replies do not produce by
accident: amounts with cents (a whole number is any number: a count, a day) and ids (a word with
a digit, six characters or more; not a date, a time or a phone number, which an honest reply may
well share). Anything the task's context says (what its ground truth shows, the request, the
user's facts, the required outputs) is never a false claim. An amount the task asks for (a
credit limit, a total) also gets as its rivals every amount of the records reached, listed or
not (a product's other variants' prices too); an asked-for amount, also the amounts of its kind
in the other records the ground truth reads (the customer's other bills beside the one they
owe), less the values its calls are made with (the bills a `calculate` sums): `amount_rivals`.
A reply may name them, each said of its own record, but must give the asked-for one as the
answer (`castbench._grading.earned`): a list of every bill's amount says none is what is owed.

A published task set with no such rules of its own (the τ and τ² packs) gets its `no_change`
tasks' earned specs from the same machinery: `published_earned_spec`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from castbench._domain.database import Database
from castbench._domain.identity import IDENTITY_PREFIX
from castbench._domain.leaves import is_name_key, leaves, listed_argument
from castbench._domain.task import EarnedSpec, Lookup, Mention, Rival, Task, ToolCall
from castbench._domain.tools import Toolkit
from castbench._grading.outputs import Said
from castbench._grading.ties import json_objects, result_objects
from castbench_authoring.validate import shown_values

__all__ = [
    "ReadAmount",
    "amount_rivals",
    "published_earned_spec",
    "read_amounts",
    "unread_record_claims",
    "unread_values",
]

_SPOKEN_NUMBER = re.compile(r"^[$€£]?\s?\d[\d,]*(?:\.\d+)?$")

_AMOUNT = re.compile(r"^\d+\.\d*[1-9]\d*$")
_NUMBER = re.compile(r"^\d{2,}(?:\.\d+)?$")
"""An amount of two digits or more (a single digit is a count)."""
_ID = re.compile(r"^#?(?=\S*\d)(?:[A-Za-z][\w-]{5,}|\d{6,})$")
"""A word with a digit: letters first (`#W2089998`, `credit_card_5589442`, `HAT123`) or digits
only (an item id); dates, times and phone numbers (digits between separators) are not ids."""


def _pointers(content: str) -> list[tuple[str, str, bool]]:
    """(argument name, id, listed) for every id a result names: under `<x>_id`, or listed under
    `<x>s` (`reservations: [...]` -> `reservation_id`, listed)."""
    try:
        parsed = json.loads(content)
    except json.JSONDecodeError:
        return []
    found: dict[tuple[str, str, bool], None] = {}
    for record in json_objects(parsed):
        for key, value in record.items():
            if key.endswith("_id") and isinstance(value, str):
                found[(key, value, False)] = None
            elif isinstance(value, list) and value and all(isinstance(item, str) for item in value):
                for item in value:
                    found[(listed_argument(key), item, True)] = None
    return list(found)


def _by_id(toolkit: Toolkit) -> dict[str, str]:
    """Argument name -> the read tool whose one required argument it is."""
    found: dict[str, str] = {}
    for name in toolkit.names:
        if toolkit.is_write(name):
            continue
        fields = toolkit[name].arguments_model.model_fields
        required = [key for key, field in fields.items() if field.is_required()]
        if len(required) == 1:
            found.setdefault(required[0], name)
    return found


def unread_values(
    toolkit: Toolkit,
    db: Database,
    read: Sequence[ToolCall],
    results: Sequence[str],
    depth: int = 2,
    listed_only: bool = True,
) -> list[str]:
    """Every value of the customer's other records: those listed in a record (`orders: [...]`)
    that `results` (what the ground truth's reads `read` returned, on `db`) lead to within
    `depth` hops and the ground truth does not read itself. A record named by a single id (the
    customer's profile, a product of the catalogue) is followed for its lists, and collected
    only if not `listed_only`: an honest reply may well quote the profile or a product, but not
    beside the one amount it was asked for."""
    lookups = _by_id(toolkit)
    done = {(call.name, json.dumps(call.arguments, sort_keys=True)) for call in read}
    values: list[str] = []
    frontier = list(results)
    for _ in range(depth):
        reached = []
        for content in frontier:
            for argument, value, listed in _pointers(content):
                tool = lookups.get(argument)
                if tool is None or (key := (tool, json.dumps({argument: value}, sort_keys=True))) in done:
                    continue
                done.add(key)
                observation = toolkit.call(db, tool, {argument: value})
                if observation.error:
                    continue
                reached.append(observation.content)
                if listed or not listed_only:
                    values.extend(shown_values([observation.content]))
        frontier = reached
    return list(dict.fromkeys(values))


def unread_record_claims(values: Sequence[str], context: Sequence[str]) -> list[Mention]:
    """The amounts with cents and the ids among `values` (`unread_values`), each a false claim,
    less anything `context` says."""
    said = Said(context)
    return [
        Mention(any_of=[value])
        for value in values
        if (_AMOUNT.match(value) or _ID.match(value)) and not said.says(value, negation=False)
    ]


@dataclass(frozen=True)
class ReadAmount:
    """An amount a named record of the ground truth's results holds, and where."""

    value: str
    field: str
    """Its path inside the record (`amount`, `charges.amount`): what kind of value it is."""
    record: frozenset[str]
    """The names of the record that holds it."""


def _numbers(value: object, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item, path)
    elif isinstance(value, int | float) and not isinstance(value, bool) and _NUMBER.match(str(value)):
        yield str(value), path


def read_amounts(results: Sequence[str]) -> list[ReadAmount]:
    """Every amount (a JSON number of two digits or more) the named records of `results` (what
    the ground truth's reads returned) hold, with its field and its record."""
    found: dict[ReadAmount, None] = {}
    for content in results:
        for record in result_objects(content):
            names = frozenset(
                str(value)
                for key, value in record.items()
                if is_name_key(key) and isinstance(value, str | int) and not isinstance(value, bool)
            )
            if names:
                for value, path in _numbers(record, ""):
                    found[ReadAmount(value, path, names)] = None
    return list(found)


def _beside(wording: str, read: Sequence[ReadAmount], used: Said) -> list[str]:
    """The amounts of `read` of the kind `wording` is (the fields that hold it, or that hold the
    values the ground truth computed it from: `used`) in the other records."""
    itself = Said([wording])
    sources = [a for a in read if itself.says(a.value, negation=False) or used.says(a.value, negation=False)]
    fields = {a.field for a in sources}
    owners = {a.record for a in sources}
    return [
        a.value
        for a in read
        if a.field in fields
        and a.record not in owners
        and not itself.says(a.value, negation=False)
        and not used.says(a.value, negation=False)
    ]


def amount_rivals(
    wordings: Sequence[str],
    values: Sequence[str],
    context: Sequence[str],
    answers: Sequence[str] = (),
    read: Sequence[ReadAmount] = (),
    calls: Sequence[ToolCall] = (),
) -> list[Rival]:
    """For each of `wordings` (a task's reason wordings and required outputs) that is an amount (a
    credit limit, a total), its rivals: every amount among `values` (`unread_values`), whole ones
    of two digits or more too, that neither it nor `context` says. For each of `answers` (the
    required outputs: what a look-up asks for), also the amounts of its kind that the other
    records of `read` (`read_amounts`: what the ground truth read) hold, less the values of
    `calls` (the bills a `calculate` adds up are the answer's own): the other bills' amounts
    beside the one owed. A reply that states every amount it saw names them beside it, and so has
    not said which amount is the answer."""
    said = Said(context)
    used = Said([str(leaf) for call in calls for leaf in leaves(call.arguments)])
    amounts = [value for value in values if _NUMBER.match(value) and not said.says(value, negation=False)]
    rivals = []
    for wording in dict.fromkeys([*wordings, *answers]):
        if not _SPOKEN_NUMBER.match(wording.strip()):
            continue
        itself = Said([wording])
        beside = _beside(wording, read, used) if wording in answers else []
        others = list(dict.fromkeys(a for a in [*amounts, *beside] if not itself.says(a, negation=False)))
        if others:
            rivals.append(Rival(output=wording, others=others))
    return rivals


def published_earned_spec(
    toolkit: Toolkit, db: Database, task: Task, skipped: frozenset[str] = frozenset()
) -> EarnedSpec | None:
    """How a published pack's `no_change` task is earned (τ, τ²: the task set has no rule of its
    own): every gold read that succeeds and establishes a fact (not the tools in `skipped`:
    `think`, `calculate`, a transfer) made successfully by the agent, any identity look-up
    (`find_*`) standing for another whatever its arguments (a user found by name and zip code is
    as found as one found by email); its false claims and rivals from the records the gold's
    results point to and it does not read, and the amounts beside an asked-for one (this module).
    None when the gold looks nothing up (the task keeps the pack's rule)."""
    if task.outcome != "no_change":
        return None
    finders = [name for name in toolkit.names if name.startswith(IDENTITY_PREFIX)]
    lookups: list[Lookup] = []
    results: list[str] = []
    for call in task.actions:
        if call.name in skipped or call.name not in toolkit or toolkit.is_write(call.name):
            continue
        observation = toolkit.call(db, call.name, call.arguments)
        if observation.error:
            continue
        results.append(observation.content)
        if call.name.startswith(IDENTITY_PREFIX):
            others = [ToolCall(name=name, arguments={}) for name in finders if name != call.name]
            lookup = Lookup(any_of=[call, *others])
        else:
            lookup = Lookup(any_of=[call])
        if lookup not in lookups:
            lookups.append(lookup)
    if not lookups:
        return None
    context = [*shown_values(results), task.scenario.instructions, *task.required_outputs]
    values = unread_values(toolkit, db, task.actions, results)
    return EarnedSpec(
        lookups=lookups,
        false_claims=unread_record_claims(values, context),
        rivals=amount_rivals(
            task.required_outputs,
            unread_values(toolkit, db, task.actions, results, listed_only=False),
            context,
            answers=task.required_outputs,
            read=read_amounts(results),
            calls=task.actions,
        ),
        derived=True,
    )
