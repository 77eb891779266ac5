"""The airline's tools enforce the policy's checkable rules; errors reach the agent as observations
and leave the state unchanged."""

from __future__ import annotations

import json

import pytest
from airline_helpers import card, find, gift_card, old, open_for_changes, status

from castbench.domain import Database, Domain
from castbench_airline.checks import free_bags
from castbench_airline.schema import Certificate, Flight, Reservation, User
from castbench_airline.timeline import TODAY


def _refused(airline: Domain, db: Database, tool: str, arguments: dict, words: str) -> None:
    observation = airline.toolkit.call(db, tool, arguments)
    assert observation.error, observation.content
    assert words in observation.content, observation.content
    assert not db.has_changes()


def test_every_parameter_is_described_in_the_schema(airline: Domain) -> None:
    assert len(airline.toolkit) == 16
    for schema in airline.toolkit.schemas:
        function = schema["function"]
        assert function["description"]
        for name, spec in function["parameters"]["properties"].items():
            assert spec.get("description"), f"{function['name']}.{name}"
    booking = airline.toolkit["book_reservation"].schema["function"]["parameters"]
    assert set(booking["required"]) == set(booking["properties"])
    nested = json.dumps(booking)
    for field in ("flight_number", "first_name", "dob", "payment_id", "amount"):
        assert field in nested


def test_identity_needs_the_right_date_of_birth(airline: Domain, db: Database) -> None:
    user = next(db.scan(User))
    ok = airline.toolkit.call(
        db, "verify_user_identity", {"user_id": user.user_id, "date_of_birth": user.dob}
    )
    assert not ok.error and user.user_id in ok.content
    wrong = airline.toolkit.call(
        db, "verify_user_identity", {"user_id": user.user_id, "date_of_birth": "1900-01-01"}
    )
    assert wrong.error and "does not match" in wrong.content
    assert airline.toolkit.call(
        db, "verify_user_identity", {"user_id": "nobody_0000", "date_of_birth": user.dob}
    ).error


def test_cancel_of_an_old_economy_reservation_is_refused(airline: Domain, db: Database) -> None:
    reservation = find(
        db, lambda r: open_for_changes(db, r) and old(r) and r.cabin != "business" and not r.insurance
    )
    _refused(
        airline,
        db,
        "cancel_reservation",
        {"reservation_id": reservation.reservation_id, "reason": "change of plan"},
        "cannot be cancelled",
    )
    _refused(
        airline,
        db,
        "cancel_reservation",
        {"reservation_id": reservation.reservation_id, "reason": "airline cancelled flight"},
        "was cancelled by the airline",
    )


def test_cancel_with_insurance_needs_a_covered_reason(airline: Domain, db: Database) -> None:
    reservation = find(
        db, lambda r: open_for_changes(db, r) and old(r) and r.cabin != "business" and r.insurance
    )
    arguments = {"reservation_id": reservation.reservation_id, "reason": "change of plan"}
    _refused(airline, db, "cancel_reservation", arguments, "does not cover")
    done = airline.toolkit.call(db, "cancel_reservation", {**arguments, "reason": "health"})
    assert not done.error
    after = db.get(Reservation, reservation.reservation_id)
    assert after.status == "cancelled"
    assert sum(p.amount for p in after.payment_history) == pytest.approx(0)


def test_cancel_after_departure_is_refused(airline: Domain, db: Database) -> None:
    reservation = find(
        db,
        lambda r: (
            r.status == "active"
            and r.cabin == "business"
            and status(db, r.flights[0].flight_number, r.flights[0].date) == "landed"
        ),
    )
    _refused(
        airline,
        db,
        "cancel_reservation",
        {"reservation_id": reservation.reservation_id, "reason": "other"},
        "already departed",
    )


def test_cancel_refunds_gift_cards_at_once(airline: Domain, db: Database) -> None:
    def paid_by_gift(r: Reservation) -> bool:
        return any(p.payment_id.startswith("gift_card") for p in r.payment_history)

    reservation = find(db, lambda r: open_for_changes(db, r) and r.cabin == "business" and paid_by_gift(r))
    gift = next(p for p in reservation.payment_history if p.payment_id.startswith("gift_card"))
    before = db.get(User, reservation.user_id).payment_methods[gift.payment_id]
    done = airline.toolkit.call(
        db, "cancel_reservation", {"reservation_id": reservation.reservation_id, "reason": "other"}
    )
    assert not done.error
    after = db.get(User, reservation.user_id).payment_methods[gift.payment_id]
    assert after.amount == pytest.approx(before.amount + gift.amount)  # type: ignore[union-attr]


def test_basic_economy_flights_cannot_change(airline: Domain, db: Database) -> None:
    reservation = find(db, lambda r: open_for_changes(db, r) and r.cabin == "basic_economy")
    flights = [{"flight_number": f.flight_number, "date": f.date} for f in reservation.flights]
    _refused(
        airline,
        db,
        "update_reservation_flights",
        {
            "reservation_id": reservation.reservation_id,
            "flights": flights,
            "payment_id": card(db, reservation),
        },
        "basic economy",
    )


def test_flight_change_keeps_the_route(airline: Domain, db: Database) -> None:
    reservation = find(
        db, lambda r: open_for_changes(db, r) and r.cabin == "economy" and r.flight_type == "one_way"
    )
    elsewhere = next(
        f
        for f in db.scan(Flight)
        if f.origin != reservation.origin and f.dates["2026-05-25"].status == "available"
    )
    _refused(
        airline,
        db,
        "update_reservation_flights",
        {
            "reservation_id": reservation.reservation_id,
            "flights": [{"flight_number": elsewhere.flight_number, "date": "2026-05-25"}],
            "payment_id": card(db, reservation),
        },
        "must go from",
    )


def test_certificates_do_not_pay_for_changes(airline: Domain, db: Database) -> None:
    def has_certificate(r: Reservation) -> bool:
        methods = db.get(User, r.user_id).payment_methods.values()
        return any(isinstance(m, Certificate) for m in methods)

    reservation = find(db, lambda r: open_for_changes(db, r) and r.cabin == "economy" and has_certificate(r))
    methods = db.get(User, reservation.user_id).payment_methods.values()
    certificate = next(m.id for m in methods if isinstance(m, Certificate))
    _refused(
        airline,
        db,
        "update_reservation_cabin",
        {"reservation_id": reservation.reservation_id, "cabin": "business", "payment_id": certificate},
        "travel certificate",
    )


def test_cabin_change_reprices_every_flight(airline: Domain, db: Database) -> None:
    def fits(r: Reservation) -> bool:
        return (
            open_for_changes(db, r)
            and r.cabin == "economy"
            and len(r.flights) == 2
            and all(
                db.get(Flight, f.flight_number).dates[f.date].available_seats["business"] >= len(r.passengers)
                for f in r.flights
            )
        )

    reservation = find(db, fits)
    done = airline.toolkit.call(
        db,
        "update_reservation_cabin",
        {
            "reservation_id": reservation.reservation_id,
            "cabin": "business",
            "payment_id": card(db, reservation),
        },
    )
    assert not done.error, done.content
    after = db.get(Reservation, reservation.reservation_id)
    prices = [db.get(Flight, f.flight_number).dates[f.date].prices["business"] for f in after.flights]
    assert after.cabin == "business" and [f.price for f in after.flights] == prices
    difference = (sum(prices) - sum(f.price for f in reservation.flights)) * len(reservation.passengers)
    assert after.payment_history[-1].amount == pytest.approx(difference)


def test_bags_cannot_be_removed_and_nonfree_must_match(airline: Domain, db: Database) -> None:
    reservation = find(db, lambda r: open_for_changes(db, r) and r.total_baggages > 0)
    user = db.get(User, reservation.user_id)
    arguments = {"reservation_id": reservation.reservation_id, "payment_id": card(db, reservation)}
    _refused(
        airline,
        db,
        "update_reservation_baggages",
        {**arguments, "total_baggages": reservation.total_baggages - 1, "nonfree_baggages": 0},
        "cannot be removed",
    )
    total = free_bags(user.membership, reservation.cabin, len(reservation.passengers)) + 2
    total = max(total, reservation.total_baggages + 1)
    wrong = {**arguments, "total_baggages": total, "nonfree_baggages": 0}
    _refused(airline, db, "update_reservation_baggages", wrong, "non-free")


def test_paid_bags_need_a_payment_method(airline: Domain, db: Database) -> None:
    reservation = find(db, lambda r: open_for_changes(db, r))
    user = db.get(User, reservation.user_id)
    allowance = free_bags(user.membership, reservation.cabin, len(reservation.passengers))
    total = max(allowance, reservation.total_baggages) + 1
    _refused(
        airline,
        db,
        "update_reservation_baggages",
        {
            "reservation_id": reservation.reservation_id,
            "total_baggages": total,
            "nonfree_baggages": total - allowance,
        },
        "payment method is needed",
    )


def test_gift_card_must_cover_a_charge(airline: Domain, db: Database) -> None:
    def poor(r: Reservation) -> bool:
        gift = gift_card(db, r)
        return open_for_changes(db, r) and gift is not None and gift.amount < 100

    reservation = find(db, poor)
    user = db.get(User, reservation.user_id)
    gift = gift_card(db, reservation)
    assert gift is not None
    allowance = free_bags(user.membership, reservation.cabin, len(reservation.passengers))
    base = max(allowance, reservation.total_baggages)
    extra = 3
    _refused(
        airline,
        db,
        "update_reservation_baggages",
        {
            "reservation_id": reservation.reservation_id,
            "total_baggages": base + extra,
            "nonfree_baggages": base + extra - allowance,
            "payment_id": gift.id,
        },
        "insufficient balance",
    )


def test_passenger_count_cannot_change(airline: Domain, db: Database) -> None:
    reservation = find(db, lambda r: open_for_changes(db, r))
    passengers = [p.model_dump() for p in reservation.passengers]
    _refused(
        airline,
        db,
        "update_reservation_passengers",
        {"reservation_id": reservation.reservation_id, "passengers": passengers + passengers[:1]},
        "number of passengers",
    )


def test_compensation_rules(airline: Domain, db: Database) -> None:
    def disrupted(r: Reservation, wanted: str) -> bool:
        return any(status(db, f.flight_number, f.date) == wanted for f in r.flights)

    def regular(r: Reservation) -> bool:
        return db.get(User, r.user_id).membership == "regular" and not r.insurance and r.cabin != "business"

    plain = find(db, lambda r: disrupted(r, "cancelled") and regular(r) and not r.compensated)
    _refused(
        airline,
        db,
        "send_certificate",
        {
            "user_id": plain.user_id,
            "reservation_id": plain.reservation_id,
            "reason": "cancelled flight",
            "amount": 100.0 * len(plain.passengers),
        },
        "no compensation",
    )
    eligible = find(db, lambda r: disrupted(r, "delayed") and not regular(r) and not r.compensated)
    arguments = {
        "user_id": eligible.user_id,
        "reservation_id": eligible.reservation_id,
        "reason": "delayed flight",
    }
    _refused(
        airline, db, "send_certificate", {**arguments, "amount": 999.0}, "compensation for a delayed flight"
    )
    _refused(
        airline,
        db,
        "send_certificate",
        {**arguments, "reason": "cancelled flight", "amount": 100.0 * len(eligible.passengers)},
        "is cancelled",
    )
    done = airline.toolkit.call(
        db, "send_certificate", {**arguments, "amount": 50.0 * len(eligible.passengers)}
    )
    assert not done.error and "certificate_8000001" in done.content
    assert db.get(Reservation, eligible.reservation_id).compensated
    again = airline.toolkit.call(
        db, "send_certificate", {**arguments, "amount": 50.0 * len(eligible.passengers)}
    )
    assert again.error and "already compensated" in again.content


def _open_flight(db: Database, day: str, seats: int = 2) -> Flight:
    return next(
        f
        for f in db.scan(Flight)
        if f.dates[day].status == "available" and f.dates[day].available_seats["economy"] >= seats
    )


def _booking(db: Database, user: User, flight: Flight, day: str, payments: list[dict]) -> dict:
    me = {"first_name": user.name.first_name, "last_name": user.name.last_name, "dob": user.dob}
    return {
        "user_id": user.user_id,
        "origin": flight.origin,
        "destination": flight.destination,
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [{"flight_number": flight.flight_number, "date": day}],
        "passengers": [me],
        "payment_methods": payments,
        "total_baggages": 0,
        "nonfree_baggages": 0,
        "insurance": False,
    }


def test_booking_checks_the_total_and_the_payment_mix(airline: Domain, db: Database) -> None:
    user = next(
        u for u in db.scan(User) if sum(m.source == "credit_card" for m in u.payment_methods.values()) == 2
    )
    cards = [m.id for m in user.payment_methods.values() if m.source == "credit_card"]
    day = "2026-05-24"
    flight = _open_flight(db, day)
    price = flight.dates[day].prices["economy"]
    _refused(
        airline,
        db,
        "book_reservation",
        _booking(db, user, flight, day, [{"payment_id": cards[0], "amount": price - 1}]),
        "add up to",
    )
    split = [{"payment_id": cards[0], "amount": price - 10}, {"payment_id": cards[1], "amount": 10}]
    _refused(airline, db, "book_reservation", _booking(db, user, flight, day, split), "one credit card")
    done = airline.toolkit.call(
        db, "book_reservation", _booking(db, user, flight, day, [{"payment_id": cards[0], "amount": price}])
    )
    assert not done.error, done.content
    booked = json.loads(done.content)
    assert booked["reservation_id"] == "NB1001" and booked["created_at"].startswith(TODAY)
    assert "NB1001" in db.get(User, user.user_id).reservations
    seats = db.get(Flight, flight.flight_number).dates[day].available_seats["economy"]
    assert seats == flight.dates[day].available_seats["economy"] - 1


def test_booking_refuses_a_flight_not_open(airline: Domain, db: Database) -> None:
    user = next(db.scan(User))
    flight = next(f for f in db.scan(Flight) if f.dates[TODAY].status == "delayed")
    cardid = next(m.id for m in user.payment_methods.values() if m.source == "credit_card")
    _refused(
        airline,
        db,
        "book_reservation",
        _booking(db, user, flight, TODAY, [{"payment_id": cardid, "amount": 100}]),
        "not available for booking",
    )


def test_searches_return_only_open_flights(airline: Domain, db: Database) -> None:
    flight = _open_flight(db, "2026-05-22", 1)
    direct = json.loads(
        airline.toolkit.call(
            db,
            "search_direct_flight",
            {"origin": flight.origin, "destination": flight.destination, "date": "2026-05-22"},
        ).content
    )
    assert flight.flight_number in [offer["flight_number"] for offer in direct]
    assert not json.loads(
        airline.toolkit.call(
            db,
            "search_direct_flight",
            {"origin": flight.origin, "destination": flight.destination, "date": TODAY},
        ).content
    )
    for first in db.scan(Flight):
        pairs = json.loads(
            airline.toolkit.call(
                db,
                "search_onestop_flight",
                {"origin": first.origin, "destination": "SEA", "date": "2026-05-22"},
            ).content
        )
        if pairs:
            break
    for leg1, leg2 in pairs:
        assert leg1["destination"] == leg2["origin"] and leg2["destination"] == "SEA"
        assert leg2["scheduled_departure"] > leg1["scheduled_arrival"]


def test_flight_status_shows_delays(airline: Domain, db: Database) -> None:
    flight = next(f for f in db.scan(Flight) if f.dates[TODAY].status == "delayed")
    result = json.loads(
        airline.toolkit.call(
            db, "get_flight_status", {"flight_number": flight.flight_number, "date": TODAY}
        ).content
    )
    assert result["status"] == "delayed" and result["estimated_departure"] > result["scheduled_departure"]
    missing = airline.toolkit.call(db, "get_flight_status", {"flight_number": "CB000", "date": TODAY})
    assert missing.error and "not found" in missing.content


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('true')",
        "'a' * 10",
        "2 ** 999999",
        "open('/etc/passwd')",
        "x + 1",
        "True + 1",
    ],
)
def test_calculate_rejects_anything_but_arithmetic(airline: Domain, db: Database, expression: str) -> None:
    assert airline.toolkit.call(db, "calculate", {"expression": expression}).error


def test_calculate_rounds_to_cents(airline: Domain, db: Database) -> None:
    assert (
        airline.toolkit.call(db, "calculate", {"expression": "(312 + 95) * 2 + 30 / 4"}).content == "821.50"
    )
    assert airline.toolkit.call(db, "calculate", {"expression": "1 / 0"}).error


def test_transfer_ends_the_conversation_without_changes(airline: Domain, db: Database) -> None:
    observation = airline.toolkit.call(
        db, "transfer_to_human_agents", {"summary": "wants a refund for a meal"}
    )
    assert observation.ends_conversation and not observation.error and not db.has_changes()


def test_airports_list_maps_codes_to_cities(airline: Domain, db: Database) -> None:
    listing = json.loads(airline.toolkit.call(db, "list_all_airports", {}).content)
    assert len(listing) == 20 and listing["SEA"] == "Seattle"
