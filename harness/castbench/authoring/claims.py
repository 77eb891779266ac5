"""False claims from a task's own data: what the records a task is *not* about say.

A task-blind agent that reads every record it can reach and repeats every value states the
customer's other orders' totals, their other reservations' flights and ids. An agent answering
the task has no reason to: those values are claims about records the user did not ask about, and
a reply that makes them fails the earned check (`castbench.grading.earned`) like a false reason.
This module finds them for any task set whose tools look records up by id (castbench's generated
domains and the τ packs alike): starting from what the ground truth's reads return, it follows
every id they name (under `<x>_id`, or listed under `<x>s` or `<x>_ids`: `listed_argument`) with the one-argument look-up for
that id, up to `depth` hops, skipping the records the ground truth reads itself. The records
reached through a list (the customer's other orders, reservations, lines) are the ones the task
is not about; of their values it keeps two kinds that honest replies do not produce by
accident: amounts with cents (a whole number is any number: a count, a day) and ids (a word with
a digit, six characters or more; not a date, a time or a phone number, which an honest reply may
well share). Anything the task's context says (what its ground truth shows, the request, the
user's facts, the required outputs) is never a false claim. An amount the task asks for (a
credit limit, a total) also gets as its rivals every amount of the records reached, listed or
not (a product's other variants' prices too: `amount_rivals`): the reply that states it must
name none of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from castbench.authoring.validate import shown_values
from castbench.domain.database import Database
from castbench.domain.leaves import listed_argument
from castbench.domain.task import Mention, Rival, ToolCall
from castbench.domain.tools import Toolkit
from castbench.grading.outputs import Said
from castbench.grading.ties import json_objects

__all__ = ["amount_rivals", "unread_record_claims", "unread_values"]

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


def amount_rivals(wordings: Sequence[str], values: Sequence[str], context: Sequence[str]) -> list[Rival]:
    """For each of `wordings` (a task's reason wordings and required outputs) that is an amount (a
    credit limit, a total), its rivals: every amount among `values` (`unread_values`), whole ones
    of two digits or more too, that neither it nor `context` says. A reply that states every
    amount it saw names them beside it, and so has not said which amount is the answer."""
    said = Said(context)
    amounts = [value for value in values if _NUMBER.match(value) and not said.says(value, negation=False)]
    rivals = []
    for wording in dict.fromkeys(wordings):
        if not _SPOKEN_NUMBER.match(wording.strip()):
            continue
        itself = Said([wording])
        others = list(dict.fromkeys(a for a in amounts if not itself.says(a, negation=False)))
        if others:
            rivals.append(Rival(output=wording, others=others))
    return rivals
