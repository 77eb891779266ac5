"""The labeler's explicit yes, as people give it: the user's yes answers the agent's latest
description of the change, which may name the item by its name and options, the payment method
by its kind and last digits, and may sit in the message before the go-ahead question. A yes
given before the change was described, or to a different change, is still no confirmation."""

from __future__ import annotations

import json

from castbench.conversation import AgentTurn, Event, ReplyAction, ToolCallAction, ToolResultTurn, UserTurn
from castbench.domain import load_domain
from castbench.grading.confirmation import describes
from castbench.grading.labeler import label_action

DOMAIN = load_domain("retail")
TASK = DOMAIN.task("retail-test-0005")  # cancel #W5269985, then return the Office Chair of #W6054152
RETURN = next(call for call in TASK.actions if call.name == "return_delivered_order_items")
ORDER = RETURN.arguments["order_id"]
YES = "Yes, please go ahead."


def _looked_up() -> list[Event]:
    """The customer found, their profile and the order read (what describes the ids)."""
    db = DOMAIN.initial_database(TASK)
    events: list[Event] = [UserTurn(text=TASK.scenario.request)]
    user_id = DOMAIN.toolkit.call(db, "find_user_id_by_email", {"email": _fact("email")}).content
    for n, (name, arguments) in enumerate(
        [
            ("find_user_id_by_email", {"email": _fact("email")}),
            ("get_user_details", {"user_id": user_id}),
            ("get_order_details", {"order_id": ORDER}),
        ]
    ):
        content = DOMAIN.toolkit.call(db, name, arguments).content
        events.append(AgentTurn(action=ToolCallAction(name=name, arguments=arguments), call_id=f"c{n}"))
        events.append(ToolResultTurn(call_id=f"c{n}", name=name, content=content))
    return events


def _fact(name: str) -> str:
    facts = {fact.name: fact.value for fact in TASK.scenario.facts}
    if name == "email" and "email" not in facts:  # the task authenticates by name and zip
        user = next(u for u in DOMAIN.fresh_database().pristine["users"].values() if ORDER in u["orders"])
        return str(user["email"])
    return facts[name]


def _chair() -> str:
    order = DOMAIN.fresh_database().pristine["orders"][ORDER]
    item = next(i for i in order["items"] if i["item_id"] in RETURN.arguments["item_ids"])
    return f"the {item['name']} ({', '.join(item['options'].values())})"


def _payment() -> str:
    method = RETURN.arguments["payment_method_id"]
    users = DOMAIN.fresh_database().pristine["users"].values()
    record = next(u["payment_methods"][method] for u in users if method in u["payment_methods"])
    digits = f" ending in {record['last_four']}" if "last_four" in record else ""
    return f"your {record['source'].replace('_', ' ')}{digits}"


def _label(events: list[Event]) -> str:
    action = ToolCallAction(name=RETURN.name, arguments=dict(RETURN.arguments))
    label = label_action(DOMAIN, TASK, action, DOMAIN.initial_database(TASK), events)
    return label.reason if label.label == "invalid" else "valid"


def _say(text: str, answer: str) -> list[Event]:
    return [AgentTurn(action=ReplyAction(text=text)), UserTurn(text=answer)]


def test_a_natural_description_is_a_confirmation() -> None:
    described = f"I'm about to return {_chair()} from order {ORDER} to {_payment()}. Shall I proceed?"
    assert _label([*_looked_up(), *_say(described, YES)]) == "valid"


def test_details_and_the_question_may_sit_in_consecutive_messages() -> None:
    details = f"Here is the change: a return of {_chair()} from order {ORDER}, refunded to {_payment()}."
    events = [*_looked_up(), *_say(details, "Okay."), *_say("Shall I proceed?", YES)]
    assert _label(events) == "valid"
    declined = [*_looked_up(), *_say(details, "No, wait."), *_say("Shall I proceed?", YES)]
    assert _label(declined) == "no explicit confirmation from the user for this change"


def test_a_yes_before_the_description_or_to_another_change_is_none() -> None:
    no = "no explicit confirmation from the user for this change"
    early = [*_looked_up(), *_say("Shall I proceed?", YES), *_say(f"I'll return {_chair()}.", "Okay.")]
    assert _label(early) == no
    other = f"I'm about to cancel order {ORDER}. Shall I proceed?"
    assert _label([*_looked_up(), *_say(other, YES)]) == no
    vague = f"I'm about to return {_chair()} from order {ORDER} to your card. Shall I proceed?"
    assert _label([*_looked_up(), *_say(vague, YES)]) == no


def test_a_payment_method_by_kind_and_last_digits_and_a_date_in_words() -> None:
    methods = {
        "credit_card_1": {
            "source": "credit_card",
            "id": "credit_card_1",
            "brand": "discover",
            "last_four": "3275",
        },
        "credit_card_2": {
            "source": "credit_card",
            "id": "credit_card_2",
            "brand": "visa",
            "last_four": "1111",
        },
        "gift_card_3045203": {"source": "gift_card", "id": "gift_card_3045203"},
        "gift_card_3244728": {"source": "gift_card", "id": "gift_card_3244728"},
    }
    results = [json.dumps({"payment_methods": methods})]
    for text, value, named in [
        ("your Discover card ending 3275", "credit_card_1", True),
        ("your card ending in 3275", "credit_card_1", True),
        ("your credit card", "credit_card_1", False),  # which of the two?
        ("your Visa ending 3275", "credit_card_2", False),
        ("the gift card ending in 5203", "gift_card_3045203", True),
        ("your gift card", "gift_card_3045203", False),
        ("on May 26", "2026-05-26", True),
        ("on May 27", "2026-05-26", False),
    ]:
        assert describes(value, [text], results) is named, text
