"""The rules critic's own reading of an explicit confirmation (`critics/consent.py`), on
transcripts written the way real models write them (GPT-4o's airline trajectories were the
development set): a yes after the first word, an acknowledgement or a read between the yes and
the write, one yes for a listed batch, the target by a unique description, values in other
formats, not every argument. A write with no yes, or after a listing that left out what changes,
stays unconfirmed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from castbench._agents.critics.consent import accepts, consent
from castbench._base.conversation import (
    AgentTurn,
    Event,
    ReplyAction,
    ToolCallAction,
    ToolResultTurn,
    UserTurn,
)
from castbench.domain import ToolCall

WRITES = frozenset(
    {"update_reservation_flights", "update_reservation_baggages", "cancel_reservation", "book"}
)

USER = {
    "user_id": "mia_li_3668",
    "payment_methods": {
        "credit_card_4421486": {
            "source": "credit_card",
            "brand": "visa",
            "last_four": "6645",
            "id": "credit_card_4421486",
        },
        "credit_card_9000001": {
            "source": "credit_card",
            "brand": "mastercard",
            "last_four": "1234",
            "id": "credit_card_9000001",
        },
        "gift_card_7480005": {"source": "gift_card", "amount": 120, "id": "gift_card_7480005"},
    },
    "reservations": ["NO6JO3", "AIXC49"],
}


def reservation(rid: str, origin: str, destination: str, day: str, flights: list[str]) -> dict[str, Any]:
    return {
        "reservation_id": rid,
        "user_id": "mia_li_3668",
        "origin": origin,
        "destination": destination,
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [{"flight_number": number, "date": day, "price": 100} for number in flights],
        "payment_history": [{"payment_id": "credit_card_4421486", "amount": 200}],
    }


class Transcript:
    def __init__(self) -> None:
        self.events: list[Event] = [UserTurn(text="Hi, I need help with my trip. My user id is mia_li_3668.")]
        self._calls = 0

    def tool(self, name: str, result: Any, **arguments: Any) -> Transcript:
        self._calls += 1
        call_id = f"c{self._calls}"
        self.events.append(AgentTurn(action=ToolCallAction(name=name, arguments=arguments), call_id=call_id))
        self.events.append(ToolResultTurn(call_id=call_id, name=name, content=json.dumps(result)))
        return self

    def agent(self, text: str) -> Transcript:
        self.events.append(AgentTurn(action=ReplyAction(text=text)))
        return self

    def user(self, text: str) -> Transcript:
        self.events.append(UserTurn(text=text))
        return self

    def confirmed(self, name: str, **arguments: Any) -> bool:
        return consent(self.events, WRITES, ToolCall(name=name, arguments=arguments)).confirmed


def looked_up() -> Transcript:
    return (
        Transcript()
        .tool("get_user_details", USER, user_id="mia_li_3668")
        .tool(
            "get_reservation_details",
            reservation("NO6JO3", "DEN", "BOS", "2024-05-17", ["HAT130", "HAT184"]),
            reservation_id="NO6JO3",
        )
        .tool(
            "get_reservation_details",
            reservation("AIXC49", "JFK", "LAS", "2024-05-06", ["HAT001"]),
            reservation_id="AIXC49",
        )
    )


CHANGE = {
    "reservation_id": "NO6JO3",
    "cabin": "economy",
    "flights": [
        {"flight_number": "HAT130", "date": "2024-05-17"},
        {"flight_number": "HAT222", "date": "2024-05-22"},
    ],
    "payment_id": "credit_card_4421486",
}


def proposal(by: str = "the reservation from DEN to BOS on May 17", date: str = "May 22nd") -> str:
    return (
        f"Here is the change to {by}:\n\n- **New second flight:** HAT222 on {date}\n"
        "- **Payment:** your Visa ending in 6645\n\nWould you like me to proceed?"
    )


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, please.",
        "If that's the only option, then yes, please go ahead.",
        "That sounds good. Yes, please go ahead and proceed with the change.",
        "Okay, I'll use the Visa then. Please proceed.",
        "Perfect, let's do it!",
    ],
)
def test_a_yes_anywhere_in_the_answer(answer: str) -> None:
    assert accepts(answer)
    assert looked_up().agent(proposal()).user(answer).confirmed("update_reservation_flights", **CHANGE)


@pytest.mark.parametrize(
    "answer",
    [
        "No, wait. I changed my mind.",
        "Hmm, is that the cheapest option?",
        "I'm not sure about that yet.",
        "Actually, don't do that.",
        "I want to use the gift card. Can you also add a bag?",
    ],
)
def test_no_yes_or_a_refusal_is_no_confirmation(answer: str) -> None:
    assert not looked_up().agent(proposal()).user(answer).confirmed("update_reservation_flights", **CHANGE)


def test_an_acknowledgement_or_a_read_between_the_yes_and_the_write() -> None:
    chat = looked_up().agent(proposal()).user("Yes, go ahead.")
    chat.agent("Thank you! I'm taking care of that now \u2014 one moment.").user("Okay.")
    chat.tool("get_flight_status", {"status": "available"}, flight_number="HAT222", date="2024-05-22")
    assert chat.confirmed("update_reservation_flights", **CHANGE)


def test_one_yes_covers_a_listed_batch_of_writes() -> None:
    chat = looked_up().agent(
        "I'll make two changes to the DEN to BOS reservation:\n1. Change the second flight to HAT222 on "
        "May 22\n2. Add two checked bags (none of them paid)\nBoth charged to your Visa ending in 6645. "
        "Shall I proceed?"
    )
    chat.user("Yes, both please.")
    assert chat.confirmed("update_reservation_flights", **CHANGE)
    chat.tool(
        "update_reservation_flights",
        reservation("NO6JO3", "DEN", "BOS", "2024-05-17", ["HAT130", "HAT222"]),
        **CHANGE,
    )
    bags = {
        "reservation_id": "NO6JO3",
        "total_baggages": 2,
        "nonfree_baggages": 0,
        "payment_id": "credit_card_4421486",
    }
    assert chat.confirmed("update_reservation_baggages", **bags)
    # a third write the listing never mentioned is not covered
    assert not chat.confirmed("update_reservation_baggages", **{**bags, "total_baggages": 5})


def test_the_target_by_a_unique_description_not_an_ambiguous_one() -> None:
    assert (
        looked_up()
        .agent(proposal(by="your Denver to Boston trip, DEN to BOS"))
        .user("Yes.")
        .confirmed("update_reservation_flights", **CHANGE)
    )
    assert (
        looked_up()
        .agent(proposal(by="reservation NO6JO3"))
        .user("Yes.")
        .confirmed("update_reservation_flights", **CHANGE)
    )
    # "your one-way economy trip" fits both reservations the agent saw
    assert (
        not looked_up()
        .agent(proposal(by="your one-way economy trip"))
        .user("Yes.")
        .confirmed("update_reservation_flights", **CHANGE)
    )


@pytest.mark.parametrize(
    "date", ["May 22nd", "the 22nd of May", "5/22/2024", "2024-05-22", "Wednesday, May 22, 2024"]
)
def test_dates_in_any_format(date: str) -> None:
    assert (
        looked_up().agent(proposal(date=date)).user("Yes.").confirmed("update_reservation_flights", **CHANGE)
    )


def test_a_listing_that_leaves_out_what_changes_is_no_confirmation() -> None:
    without_flight = "I'll update the DEN to BOS reservation, charged to your Visa ending in 6645. Proceed?"
    assert (
        not looked_up().agent(without_flight).user("Yes.").confirmed("update_reservation_flights", **CHANGE)
    )
    wrong_day = proposal(date="May 23rd")
    assert not looked_up().agent(wrong_day).user("Yes.").confirmed("update_reservation_flights", **CHANGE)
    no_payment = "Change the DEN to BOS reservation's second flight to HAT222 on May 22. Proceed?"
    assert not looked_up().agent(no_payment).user("Yes.").confirmed("update_reservation_flights", **CHANGE)
    # a card of which the user has two, named only by its kind by the agent
    some_card = (
        "Change the DEN to BOS trip's second flight to HAT222 on May 22, paid by credit card. Proceed?"
    )
    assert not looked_up().agent(some_card).user("Yes.").confirmed("update_reservation_flights", **CHANGE)


def test_not_every_argument_but_the_payment_always() -> None:
    """The unchanged segment (HAT130 on May 17) and the cabin it already had need not be named;
    the payment may be the reservation's original one, or a kind the user chose themself."""
    original = (
        "Change the DEN to BOS trip's second flight to HAT222 on May 22; the difference goes back "
        "to your original payment method. OK?"
    )
    assert (
        looked_up().agent(original).user("Sure, go ahead.").confirmed("update_reservation_flights", **CHANGE)
    )
    gift = {**CHANGE, "payment_id": "gift_card_7480005"}
    chosen = "Change the DEN to BOS trip's second flight to HAT222 on May 22. Which payment method?"
    assert (
        looked_up()
        .agent(chosen)
        .user("Yes, please use my gift card.")
        .confirmed("update_reservation_flights", **gift)
    )


def test_values_in_words_money_and_none() -> None:
    booking = {
        "user_id": "mia_li_3668",
        "origin": "JFK",
        "destination": "SEA",
        "flight_type": "one_way",
        "cabin": "basic_economy",
        "flights": [{"flight_number": "HAT083", "date": "2024-05-24"}],
        "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
        "payment_methods": [{"payment_id": "gift_card_7480005", "amount": 1234.5}],
        "total_baggages": 0,
        "nonfree_baggages": 0,
        "insurance": "no",
    }
    listing = (
        "Booking summary:\n- Trip Type: One-Way, JFK to SEA\n- Flight HAT083 on Friday, May 24th\n"
        "- Cabin: Basic Economy\n- Passenger: Mia Li\n- Checked bags: none\n"
        "- Total: USD 1,234.50 on your gift card\n"
        "Is everything correct?"
    )
    assert looked_up().agent(listing).user("Yes, everything looks correct.").confirmed("book", **booking)
    assert (
        not looked_up()
        .agent(listing.replace("Basic Economy", "Economy"))
        .user("Yes.")
        .confirmed("book", **booking)
    )
    assert (
        not looked_up()
        .agent(listing.replace("1,234.50", "1,243.50"))
        .user("Yes.")
        .confirmed("book", **booking)
    )


def test_a_write_with_no_question_answered_is_unconfirmed() -> None:
    assert not looked_up().confirmed("cancel_reservation", reservation_id="AIXC49")
    chat = looked_up().agent("Cancelling AIXC49 (JFK to LAS) now.").user("Okay.")
    assert not chat.confirmed("cancel_reservation", reservation_id="AIXC49")


def test_what_the_user_asked_for_earlier_is_not_a_listing() -> None:
    """The agent must list the change: the user's request before the proposal does not count,
    their own words in the yes do."""
    chat = looked_up().user("Please move my DEN to BOS trip's second flight to HAT222 on May 22, Visa 6645.")
    chat.agent("I'll go ahead and update your reservation NO6JO3. Shall I proceed?").user("Yes.")
    assert not chat.confirmed("update_reservation_flights", **CHANGE)
    chat = looked_up().agent("I'll update the DEN to BOS trip's second flight to HAT222 on May 22. Shall I?")
    assert chat.user("Yes, and use my Visa ending in 6645.").confirmed("update_reservation_flights", **CHANGE)


def test_a_write_that_stores_nothing_new_must_say_what_it_does() -> None:
    result = {"prescription_id": "RX-552465", "medication": "Lisinopril", "refills_left": 2}
    chat = Transcript().tool("get_prescription", result, prescription_id="RX-552465")
    vague = chat.agent("I'll go ahead and update your refill RX-552465. Shall I proceed?").user("Yes.")
    assert not vague.confirmed("request_refill", prescription_id="RX-552465")
    chat = Transcript().tool("get_prescription", result, prescription_id="RX-552465")
    clear = chat.agent("I'll request a refill of your Lisinopril (RX-552465). Shall I proceed?").user("Yes.")
    assert clear.confirmed("request_refill", prescription_id="RX-552465")
    # a write whose verb is generic stores its value: the value is what must be stated
    pharmacy = {"pharmacy_id": "PH-018", "name": "Main Street Pharmacy"}
    chat = Transcript().tool("get_pharmacy", pharmacy, pharmacy_id="PH-018")
    chat.agent("Update your preferred pharmacy to Main Street Pharmacy?").user("Yes please.")
    assert chat.confirmed("update_preferred_pharmacy", patient_id="PT-457166", pharmacy_id="PH-018")


def test_an_item_variant_by_its_options_and_an_id_in_words() -> None:
    product = {
        "name": "Hiking Boots",
        "product_id": "7363354090",
        "variants": {
            "8106223139": {"item_id": "8106223139", "options": {"size": "9", "material": "leather"}},
            "3613716226": {"item_id": "3613716226", "options": {"size": "8", "material": "synthetic"}},
            "1615379700": {"item_id": "1615379700", "options": {"size": "10", "material": "synthetic"}},
        },
    }
    order = {"order_id": "#W5199551", "items": [{"item_id": "1615379700", "name": "Hiking Boots"}]}
    arguments = {
        "order_id": "#W5199551",
        "item_ids": ["1615379700"],
        "new_item_ids": ["3613716226"],
        "payment_method_id": "credit_card_4421486",
    }

    def listed(new: str) -> bool:
        chat = Transcript().tool("get_user_details", USER, user_id="mia_li_3668")
        chat.tool("get_order_details", order, order_id="#W5199551")
        chat.tool("get_product_details", product, product_id="7363354090")
        chat.agent(
            f"Exchange your Hiking Boots (10, synthetic) for {new}, paid by your Visa ending in 6645. OK?"
        )
        return chat.user("Yes.").confirmed("modify_pending_order_items", **arguments)

    assert listed("the size 8 synthetic pair")
    assert not listed("the synthetic pair")  # size 10 is synthetic too
    provider = {"provider_id": "dr_garcia_primary", "name": "Dr. Maria Garcia"}
    chat = Transcript().tool("get_provider", provider, provider_id="dr_garcia_primary")
    chat.agent("Book dr garcia primary on September 22nd at 14:00 (consultation)?").user("Yes.")
    assert chat.confirmed(
        "schedule_appointment",
        patient_id="mia_li_3668",
        provider_id="dr_garcia_primary",
        date="2025-09-22",
        time="14:00",
        appointment_type="consultation",
    )
