"""The airline policy's checkable rules, written once and used three ways.

Each check looks at what is *known* through a `Knowledge` and returns the problems it finds; what
is not known is not judged. A `Knowledge` reads the harness's facts (`castbench._domain.facts`):
the tools run the checks on the true state (`TrueFacts`) and refuse on the first problem; the
privileged labeler does the same through `rules.state_findings`; the deployed rules critic runs
them on what earlier tool results showed the agent (`ObservedFacts`).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from castbench.domain import Facts
from castbench_airline.schema import (
    Cabin,
    Certificate,
    Flight,
    FlightRef,
    FlightStatus,
    GiftCard,
    Membership,
    Passenger,
    PaymentPart,
    Reservation,
    User,
    money,
)

__all__ = [
    "BAG_PRICE",
    "CANCEL_REASONS",
    "COMPENSATION_PER_PASSENGER",
    "FREE_BAGS",
    "INSURANCE_PRICE",
    "Knowledge",
    "MAX_PASSENGERS",
    "booking_problems",
    "cabin_change_problems",
    "cancel_problems",
    "certificate_problems",
    "baggage_problems",
    "flight_change_problems",
    "free_bags",
    "passenger_problems",
    "payment_problems",
]

FREE_BAGS: dict[Membership, dict[Cabin, int]] = {
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 4},
}
"""Free checked bags per passenger."""
BAG_PRICE = 50
INSURANCE_PRICE = 30
"""Per passenger."""
MAX_PASSENGERS = 5
COMPENSATION_PER_PASSENGER = {"cancelled flight": 100, "delayed flight": 50}
CANCEL_REASONS = ("change of plan", "airline cancelled flight", "health", "weather", "other")
INSURED_REASONS = ("health", "weather")
DEPARTED: tuple[FlightStatus, ...] = ("flying", "landed")
FREE_CANCEL_WINDOW = timedelta(hours=24)


class Knowledge:
    """What is known about the state, from `facts` (the true state, or what the agent saw);
    `None` means unknown. What is known of a flight may be a route and some dates' statuses and
    prices only (what searches showed)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    def reservation(self, reservation_id: str) -> Reservation | None:
        return self.facts.record(Reservation, reservation_id)

    def user(self, user_id: str) -> User | None:
        return self.facts.record(User, user_id)

    def _day(self, flight_number: str, date: str) -> dict[str, Any]:
        flight = self.facts.seen(Flight, flight_number) or {}
        return dict(flight.get("dates", {}).get(date) or {})

    def flight_status(self, flight_number: str, date: str) -> FlightStatus | None:
        return self._day(flight_number, date).get("status")

    def route(self, flight_number: str) -> tuple[str, str] | None:
        flight = self.facts.seen(Flight, flight_number)
        return None if flight is None else (flight["origin"], flight["destination"])

    def price(self, flight_number: str, date: str, cabin: Cabin) -> int | None:
        return dict(self._day(flight_number, date).get("prices") or {}).get(cabin)


def free_bags(membership: Membership, cabin: Cabin, passengers: int) -> int:
    return FREE_BAGS[membership][cabin] * passengers


def _unchangeable(reservation: Reservation, known: Knowledge) -> list[str]:
    """A reservation that is cancelled or has a departed flight cannot be changed any more."""
    if reservation.status == "cancelled":
        return [f"reservation {reservation.reservation_id} is already cancelled"]
    for flight in reservation.flights:
        if known.flight_status(flight.flight_number, flight.date) in DEPARTED:
            return [
                f"flight {flight.flight_number} on {flight.date} of reservation "
                f"{reservation.reservation_id} has already departed"
            ]
    return []


def _cancelled_by_airline(reservation: Reservation, known: Knowledge) -> bool | None:
    statuses = [known.flight_status(f.flight_number, f.date) for f in reservation.flights]
    if "cancelled" in statuses:
        return True
    return None if None in statuses else False


def cancel_problems(reservation: Reservation, reason: str, known: Knowledge, now: datetime) -> list[str]:
    problems = _unchangeable(reservation, known)
    if problems:
        return problems
    airline_cancelled = _cancelled_by_airline(reservation, known)
    if reason == "airline cancelled flight" and airline_cancelled is False:
        return [f"no flight of reservation {reservation.reservation_id} was cancelled by the airline"]
    allowed = (
        now - reservation.created_at <= FREE_CANCEL_WINDOW
        or reservation.cabin == "business"
        or (reservation.insurance and reason in INSURED_REASONS)
        or (reason == "airline cancelled flight" and airline_cancelled is True)
    )
    if allowed or (reason == "airline cancelled flight" and airline_cancelled is None):
        return []
    insurance = (
        "has travel insurance, which does not cover"
        if reservation.insurance
        else "has no travel insurance for"
    )
    return [
        f"reservation {reservation.reservation_id} cannot be cancelled: it was booked more than 24 hours "
        f"ago, is not in business class, and {insurance} the reason '{reason}'"
    ]


def payment_problems(user: User | None, payment_id: str | None, charge: float, purpose: str) -> list[str]:
    """A charge or refund on an existing reservation: a credit card or gift card of the user."""
    if payment_id is None:
        return [f"{purpose} costs {charge:.2f}: a payment method is needed"] if charge > 0 else []
    if payment_id.startswith("certificate_"):
        return ["a travel certificate can only be used to pay for a new booking"]
    if user is None:
        return []
    method = user.payment_methods.get(payment_id)
    if method is None:
        return [f"payment method {payment_id} does not belong to user {user.user_id}"]
    if isinstance(method, GiftCard) and charge > method.amount:
        return [f"gift card {payment_id} has insufficient balance ({method.amount:.2f}) for {charge:.2f}"]
    return []


def _itinerary_problems(
    reservation_like: tuple[str, str, str], flights: list[FlightRef], known: Knowledge
) -> list[str]:
    """Flights that chain from the origin to the destination (and back, for a round trip)."""
    origin, destination, flight_type = reservation_like
    if not flights:
        return ["at least one flight is needed"]
    routes = [known.route(ref.flight_number) for ref in flights]
    if None in routes:
        return []
    legs = [route for route in routes if route is not None]
    dates = [ref.date for ref in flights]
    if dates != sorted(dates):
        return ["flights must be listed in the order they are flown"]
    if any(legs[i][1] != legs[i + 1][0] for i in range(len(legs) - 1)):
        return ["the flights do not connect: each flight must leave from where the previous one lands"]
    end = destination if flight_type == "one_way" else origin
    if legs[0][0] != origin or legs[-1][1] != end:
        return [f"the flights must go from {origin} to {end}"]
    if flight_type == "round_trip" and destination not in [leg[1] for leg in legs[:-1]]:
        return [f"a round trip must reach {destination} before returning to {origin}"]
    return []


def flight_change_problems(
    reservation: Reservation, flights: list[FlightRef], payment_id: str, known: Knowledge
) -> list[str]:
    problems = _unchangeable(reservation, known)
    if problems:
        return problems
    if reservation.cabin == "basic_economy":
        return ["basic economy flights cannot be changed"]
    trip = (reservation.origin, reservation.destination, reservation.flight_type)
    problems = _itinerary_problems(trip, flights, known)
    if problems:
        return problems
    kept = {(f.flight_number, f.date) for f in reservation.flights}
    new = [ref for ref in flights if (ref.flight_number, ref.date) not in kept]
    if not new:
        return ["the new flights are the same as the current ones"]
    for ref in new:
        status = known.flight_status(ref.flight_number, ref.date)
        if status is not None and status != "available":
            return [f"flight {ref.flight_number} on {ref.date} is not available for booking ({status})"]
    return payment_problems(known.user(reservation.user_id), payment_id, 0.0, "the change")


def cabin_change_problems(
    reservation: Reservation, cabin: Cabin, payment_id: str, known: Knowledge
) -> list[str]:
    problems = _unchangeable(reservation, known)
    if problems:
        return problems
    if cabin == reservation.cabin:
        return [f"reservation {reservation.reservation_id} is already in {cabin}"]
    for flight in reservation.flights:
        status = known.flight_status(flight.flight_number, flight.date)
        if status is not None and status != "available":
            return [
                f"flight {flight.flight_number} on {flight.date} is {status}: its cabin cannot be changed"
            ]
    return payment_problems(known.user(reservation.user_id), payment_id, 0.0, "the cabin change")


def baggage_problems(
    reservation: Reservation, total: int, nonfree: int, payment_id: str | None, known: Knowledge
) -> list[str]:
    problems = _unchangeable(reservation, known)
    if problems:
        return problems
    if total < reservation.total_baggages:
        return [f"checked bags cannot be removed (the reservation has {reservation.total_baggages})"]
    if total == reservation.total_baggages:
        return ["the number of checked bags does not change"]
    user = known.user(reservation.user_id)
    if user is None:
        return []
    allowance = free_bags(user.membership, reservation.cabin, len(reservation.passengers))
    expected = max(0, total - allowance)
    if nonfree != expected:
        return [
            f"with {allowance} free bags for this reservation, {total} bags means {expected} non-free "
            f"bags, not {nonfree}"
        ]
    charge = money((nonfree - reservation.nonfree_baggages) * BAG_PRICE)
    return payment_problems(user, payment_id, charge, "the extra bags")


def passenger_problems(reservation: Reservation, passengers: list[Passenger], known: Knowledge) -> list[str]:
    problems = _unchangeable(reservation, known)
    if problems:
        return problems
    if len(passengers) != len(reservation.passengers):
        return [
            f"the number of passengers cannot change (reservation {reservation.reservation_id} has "
            f"{len(reservation.passengers)})"
        ]
    if passengers == reservation.passengers:
        return ["the passengers are the same as before"]
    return []


def certificate_problems(
    user_id: str, reservation: Reservation, reason: str, amount: float, known: Knowledge
) -> list[str]:
    if reservation.user_id != user_id:
        return [f"reservation {reservation.reservation_id} does not belong to user {user_id}"]
    if reservation.compensated:
        return [f"reservation {reservation.reservation_id} was already compensated"]
    user = known.user(user_id)
    if user is not None and not (
        user.membership in ("silver", "gold") or reservation.insurance or reservation.cabin == "business"
    ):
        return [
            "no compensation: the user is a regular member, the reservation has no travel insurance "
            "and is not in business class"
        ]
    wanted = "cancelled" if reason == "cancelled flight" else "delayed"
    statuses = [known.flight_status(f.flight_number, f.date) for f in reservation.flights]
    if wanted not in statuses and None not in statuses:
        return [f"no flight of reservation {reservation.reservation_id} is {wanted}"]
    due = COMPENSATION_PER_PASSENGER[reason] * len(reservation.passengers)
    if money(amount) != due:
        return [f"the compensation for a {reason} is {due:.2f} for this reservation, not {amount:.2f}"]
    return []


def booking_problems(
    user: User | None,
    trip: tuple[str, str, str],
    cabin: Cabin,
    flights: list[FlightRef],
    passengers: list[Passenger],
    payments: list[PaymentPart],
    total_baggages: int,
    nonfree_baggages: int,
    insurance: bool,
    known: Knowledge,
) -> list[str]:
    if not 1 <= len(passengers) <= MAX_PASSENGERS:
        return [f"a reservation has 1 to {MAX_PASSENGERS} passengers"]
    if nonfree_baggages < 0 or nonfree_baggages > total_baggages:
        return ["non-free bags must be between 0 and the total number of bags"]
    problems = _itinerary_problems(trip, flights, known)
    if problems:
        return problems
    for ref in flights:
        status = known.flight_status(ref.flight_number, ref.date)
        if status is not None and status != "available":
            return [f"flight {ref.flight_number} on {ref.date} is not available for booking ({status})"]
    kinds = Counter(part.payment_id.split("_")[0] for part in payments)
    if kinds["certificate"] > 1 or kinds["credit"] > 1 or kinds["gift"] > 3:
        return ["a booking is paid with at most one travel certificate, one credit card and three gift cards"]
    if len({part.payment_id for part in payments}) != len(payments):
        return ["each payment method may appear only once"]
    if any(part.amount <= 0 for part in payments):
        return ["each payment amount must be positive"]
    if user is not None:
        allowance = free_bags(user.membership, cabin, len(passengers))
        if nonfree_baggages != max(0, total_baggages - allowance):
            return [
                f"with {allowance} free bags, {total_baggages} bags means "
                f"{max(0, total_baggages - allowance)} non-free bags, not {nonfree_baggages}"
            ]
        for part in payments:
            method = user.payment_methods.get(part.payment_id)
            if method is None:
                return [f"payment method {part.payment_id} does not belong to user {user.user_id}"]
            if isinstance(method, GiftCard | Certificate) and money(part.amount) > method.amount:
                return [f"{part.payment_id} has only {method.amount:.2f} left, not {part.amount:.2f}"]
    prices = [known.price(ref.flight_number, ref.date, cabin) for ref in flights]
    if None not in prices:
        n = len(passengers)
        total = money(
            sum(p for p in prices if p is not None) * n
            + (INSURANCE_PRICE * n if insurance else 0)
            + BAG_PRICE * nonfree_baggages
        )
        paid = money(sum(part.amount for part in payments))
        if paid != total:
            return [f"the payments add up to {paid:.2f}, but the booking costs {total:.2f}"]
    return []
