"""The executable policy rules: the critic's view (only what the agent saw) and the labeler's
(the true state), on hand-built cases."""

from __future__ import annotations

import json

from airline_helpers import card, find, old, open_for_changes, status

from castbench.domain import Database, Domain, ObservedCall, ToolCall
from castbench_airline.schema import Reservation, User


def _seen(airline: Domain, db: Database, *calls: ToolCall) -> list[ObservedCall]:
    observed = []
    for call in calls:
        result = airline.toolkit.call(db, call.name, call.arguments)
        observed.append(ObservedCall(call.name, dict(call.arguments), result.content, result.error))
    return observed


def _details(reservation: Reservation) -> ToolCall:
    return ToolCall(name="get_reservation_details", arguments={"reservation_id": reservation.reservation_id})


def _user(reservation: Reservation) -> ToolCall:
    return ToolCall(name="get_user_details", arguments={"user_id": reservation.user_id})


def test_auth_and_public_tools(airline: Domain) -> None:
    assert airline.rules.auth_tools == {"verify_user_identity"}
    assert "search_direct_flight" in airline.rules.public_tools
    assert not airline.rules.public_tools & {"get_user_details", "get_reservation_details"}
    assert all(name in airline.toolkit for name in airline.rules.public_tools | airline.rules.auth_tools)


def test_cancel_without_a_covered_reason(airline: Domain, db: Database) -> None:
    reservation = find(db, lambda r: open_for_changes(db, r) and old(r) and r.cabin != "business")
    cancel = ToolCall(
        name="cancel_reservation",
        arguments={"reservation_id": reservation.reservation_id, "reason": "change of plan"},
    )
    assert airline.rules.visible_findings(cancel, []) == []  # nothing seen yet: nothing to judge
    seen = _seen(airline, db, _details(reservation))
    for findings in (airline.rules.visible_findings(cancel, seen), airline.rules.state_findings(cancel, db)):
        assert [f.failure_type for f in findings] == ["domain_violation"]
        assert "cannot be cancelled" in findings[0].message


def test_claimed_airline_cancellation_needs_the_status_seen(airline: Domain, db: Database) -> None:
    reservation = find(db, lambda r: open_for_changes(db, r) and old(r) and r.cabin != "business")
    cancel = ToolCall(
        name="cancel_reservation",
        arguments={"reservation_id": reservation.reservation_id, "reason": "airline cancelled flight"},
    )
    details_only = _seen(airline, db, _details(reservation))
    assert airline.rules.visible_findings(cancel, details_only) == []  # statuses unknown to the critic
    statuses = [
        ToolCall(name="get_flight_status", arguments={"flight_number": f.flight_number, "date": f.date})
        for f in reservation.flights
    ]
    seen = _seen(airline, db, _details(reservation), *statuses)
    assert "cancelled by the airline" in airline.rules.visible_findings(cancel, seen)[0].message
    assert airline.rules.state_findings(cancel, db)


def test_business_cancellation_is_fine(airline: Domain, db: Database) -> None:
    reservation = find(db, lambda r: open_for_changes(db, r) and r.cabin == "business")
    cancel = ToolCall(
        name="cancel_reservation", arguments={"reservation_id": reservation.reservation_id, "reason": "other"}
    )
    assert airline.rules.visible_findings(cancel, _seen(airline, db, _details(reservation))) == []
    assert airline.rules.state_findings(cancel, db) == []


def test_basic_economy_change_is_flagged(airline: Domain, db: Database) -> None:
    reservation = find(db, lambda r: open_for_changes(db, r) and r.cabin == "basic_economy")
    change = ToolCall(
        name="update_reservation_flights",
        arguments={
            "reservation_id": reservation.reservation_id,
            "flights": [{"flight_number": f.flight_number, "date": f.date} for f in reservation.flights],
            "payment_id": card(db, reservation),
        },
    )
    visible = airline.rules.visible_findings(change, _seen(airline, db, _details(reservation)))
    assert visible and "basic economy" in visible[0].message
    assert "basic economy" in airline.rules.state_findings(change, db)[0].message


def test_wrong_nonfree_bags_need_the_membership_seen(airline: Domain, db: Database) -> None:
    reservation = find(db, lambda r: open_for_changes(db, r))
    bags = ToolCall(
        name="update_reservation_baggages",
        arguments={
            "reservation_id": reservation.reservation_id,
            "total_baggages": reservation.total_baggages + 9,
            "nonfree_baggages": 0,
            "payment_id": card(db, reservation),
        },
    )
    assert airline.rules.visible_findings(bags, _seen(airline, db, _details(reservation))) == []
    seen = _seen(airline, db, _details(reservation), _user(reservation))
    assert "non-free" in airline.rules.visible_findings(bags, seen)[0].message
    assert airline.rules.state_findings(bags, db)


def test_compensation_for_a_regular_uninsured_member_is_flagged(airline: Domain, db: Database) -> None:
    def fits(r: Reservation) -> bool:
        user = db.get(User, r.user_id)
        disrupted = any(status(db, f.flight_number, f.date) in ("cancelled", "delayed") for f in r.flights)
        return disrupted and user.membership == "regular" and not r.insurance and r.cabin != "business"

    reservation = find(db, fits)
    send = ToolCall(
        name="send_certificate",
        arguments={
            "user_id": reservation.user_id,
            "reservation_id": reservation.reservation_id,
            "reason": "cancelled flight",
            "amount": 100.0,
        },
    )
    seen = _seen(airline, db, _user(reservation), _details(reservation))
    assert "no compensation" in airline.rules.visible_findings(send, seen)[0].message
    assert "no compensation" in airline.rules.state_findings(send, db)[0].message


def test_booking_payment_mix_is_visible_from_the_ids(airline: Domain) -> None:
    book = ToolCall(
        name="book_reservation",
        arguments={
            "user_id": "someone_1234",
            "origin": "BOS",
            "destination": "DEN",
            "flight_type": "one_way",
            "cabin": "economy",
            "flights": [{"flight_number": "CB100", "date": "2026-05-20"}],
            "passengers": [{"first_name": "A", "last_name": "B", "dob": "1990-01-01"}],
            "payment_methods": [
                {"payment_id": "certificate_1111111", "amount": 50},
                {"payment_id": "certificate_2222222", "amount": 50},
            ],
            "total_baggages": 0,
            "nonfree_baggages": 0,
            "insurance": False,
        },
    )
    assert "at most one travel certificate" in airline.rules.visible_findings(book, [])[0].message


def test_ground_truth_writes_are_never_flagged(airline: Domain) -> None:
    for task in airline.tasks("test"):
        db = airline.fresh_database()
        observed: list[ObservedCall] = []
        for call in [*task.actions, *task.declined_actions]:
            if airline.toolkit.is_write(call.name):
                assert airline.rules.visible_findings(call, observed) == [], task.id
                assert airline.rules.state_findings(call, db) == [], task.id
            if call in task.declined_actions:
                continue
            result = airline.toolkit.call(db, call.name, call.arguments)
            observed.append(ObservedCall(call.name, dict(call.arguments), result.content, result.error))


def test_malformed_arguments_give_no_finding(airline: Domain, db: Database) -> None:
    reservation = find(db, lambda r: open_for_changes(db, r))
    seen = _seen(airline, db, _details(reservation))
    weird = ToolCall(
        name="update_reservation_baggages",
        arguments={
            "reservation_id": reservation.reservation_id,
            "total_baggages": "many",
            "nonfree_baggages": None,
        },
    )
    assert airline.rules.visible_findings(weird, seen) == []
    assert airline.rules.state_findings(weird, db) == []
    assert json.loads(seen[0].content)["reservation_id"] == reservation.reservation_id
