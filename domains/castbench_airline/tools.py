"""The airline's tools: what a customer-service agent can look up and change.

Every rule of the policy that the back end can check is checked here (through `checks`, the same
code the rules critic runs) and raised as a `ToolError`; the rest (identity, explicit
confirmation, asking before offering compensation) is the agent's job.
"""

from __future__ import annotations

from typing import Any, Literal

from castbench.domain import (
    Database,
    Row,
    ToolError,
    TrueFacts,
    calculate,
    read_tool,
    transfer_to_human_agents,
    write_tool,
)
from castbench_airline import checks
from castbench_airline.checks import BAG_PRICE, Knowledge
from castbench_airline.schema import (
    Airport,
    Cabin,
    Certificate,
    Flight,
    FlightRef,
    GiftCard,
    Passenger,
    Payment,
    PaymentPart,
    Reservation,
    ReservationFlight,
    User,
    money,
)

__all__ = ["TOOLS"]

CancelReason = Literal["change of plan", "airline cancelled flight", "health", "weather", "other"]
CONNECTION_MINUTES = 60


# -- helpers ---------------------------------------------------------------------------------
def _refuse(problems: list[str]) -> None:
    if problems:
        raise ToolError(problems[0])


def _minutes(hhmm: str) -> int:
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)


def _bookable(db: Database, ref: FlightRef, cabin: Cabin, seats: int) -> tuple[Flight, int]:
    """The flight and its current price in `cabin`; refuses a flight not open for booking."""
    flight = db.get(Flight, ref.flight_number)
    day = flight.dates.get(ref.date)
    if day is None:
        raise ToolError(f"flight {ref.flight_number} does not operate on {ref.date}")
    if day.status != "available":
        raise ToolError(
            f"flight {ref.flight_number} on {ref.date} is not available for booking ({day.status})"
        )
    if day.available_seats.get(cabin, 0) < seats:
        raise ToolError(f"flight {ref.flight_number} on {ref.date} has not enough {cabin} seats left")
    return flight, day.prices[cabin]


def _take_seats(db: Database, flight_number: str, date: str, cabin: Cabin, seats: int) -> None:
    """Take (seats > 0) or give back (seats < 0) seats on a flight that is still open for booking."""
    flight = db.get(Flight, flight_number)
    day = flight.dates.get(date)
    if day is None or day.status != "available":
        return
    day.available_seats[cabin] = day.available_seats.get(cabin, 0) - seats
    db.put(flight)


def _adjust_balance(user: User, payment_id: str, delta: float) -> None:
    """Add `delta` to a gift card's or certificate's balance (credit cards have none)."""
    method = user.payment_methods.get(payment_id)
    if isinstance(method, GiftCard | Certificate):
        balance = money(method.amount + delta)
        if balance < 0:
            raise ToolError(f"{payment_id} has insufficient balance ({method.amount:.2f})")
        method.amount = balance


def _settle(db: Database, reservation: Reservation, amount: float, payment_id: str | None) -> None:
    """Charge (amount > 0) or refund (amount < 0) a price difference on the reservation."""
    if amount == 0 or payment_id is None:
        return
    user = db.get(User, reservation.user_id)
    _adjust_balance(user, payment_id, -amount)
    reservation.payment_history.append(Payment(payment_id=payment_id, amount=money(amount)))
    db.put(user)


def _flights_shown(result: Any) -> list[Row]:
    """What a flight search or status shows of flights, as partial `Flight` rows: the route, and
    for the date shown its status (a search lists flights open for booking: `available`) and
    prices per cabin. Connections (lists of flights) are flattened."""
    rows: list[Row] = []
    for item in result if isinstance(result, list) else [result]:
        if isinstance(item, list):
            rows += _flights_shown(item)
            continue
        if not isinstance(item, dict) or not {"flight_number", "origin", "destination"} <= item.keys():
            continue
        row: Row = {key: str(item[key]) for key in ("flight_number", "origin", "destination")}
        day = item.get("date")
        if isinstance(day, str):
            prices = {cabin: int(price) for cabin, price in (item.get("prices") or {}).items()}
            shown: Row = {"prices": prices}
            status = item.get("status", "available" if "prices" in item else None)
            if status is not None:
                shown["status"] = status
            row["dates"] = {day: shown}
        rows.append(row)
    return rows


# -- identity and look-ups -------------------------------------------------------------------
@read_tool(authenticates=True)
def verify_user_identity(db: Database, user_id: str, date_of_birth: str) -> str:
    """Verify a customer's identity from their user id and date of birth. Do this first.

    Args:
        user_id: The user id the customer gives, e.g. 'hana_sato_4821'.
        date_of_birth: The date of birth the customer gives, 'YYYY-MM-DD'.
    """
    if not db.exists(User, user_id):
        raise ToolError(f"no user with id '{user_id}'")
    if db.get(User, user_id).dob != date_of_birth.strip():
        raise ToolError("the date of birth does not match this user id")
    return f"Identity verified: {user_id}"


@read_tool
def get_user_details(db: Database, user_id: str) -> User:
    """Get a customer's profile: name, membership tier, payment methods with balances, saved
    passengers and reservation ids.

    Args:
        user_id: The customer's user id, e.g. 'hana_sato_4821'.
    """
    return db.get(User, user_id)


@read_tool
def get_reservation_details(db: Database, reservation_id: str) -> Reservation:
    """Get a reservation: trip, cabin, flights with prices paid, passengers, bags, insurance,
    payment history, booking time and status.

    Args:
        reservation_id: The reservation id, e.g. 'KX4821'.
    """
    return db.get(Reservation, reservation_id)


@read_tool(public=True)
def list_all_airports(db: Database) -> dict[str, str]:
    """List every airport the airline serves, as a map from IATA code to city."""
    return {airport.iata: airport.city for airport in sorted(db.scan(Airport), key=lambda a: a.iata)}


def _offer(flight: Flight, date: str) -> dict[str, Any]:
    day = flight.dates[date]
    return {
        "flight_number": flight.flight_number,
        "origin": flight.origin,
        "destination": flight.destination,
        "date": date,
        "scheduled_departure": flight.scheduled_departure,
        "scheduled_arrival": flight.scheduled_arrival,
        "available_seats": day.available_seats,
        "prices": day.prices,
    }


def _open(flight: Flight, date: str) -> bool:
    day = flight.dates.get(date)
    return day is not None and day.status == "available"


@read_tool(public=True, returns=Flight, view=_flights_shown)
def search_direct_flight(db: Database, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
    """Search direct flights open for booking between two airports on a date, with seats and prices
    per cabin.

    Args:
        origin: IATA code of the departure airport, e.g. 'BOS'.
        destination: IATA code of the arrival airport, e.g. 'DEN'.
        date: The departure date, 'YYYY-MM-DD'.
    """
    flights = db.find(Flight, origin=origin, destination=destination)
    found = [_offer(flight, date) for flight in flights if _open(flight, date)]
    return sorted(found, key=lambda offer: offer["scheduled_departure"])


@read_tool(public=True, returns=Flight, view=_flights_shown)
def search_onestop_flight(
    db: Database, origin: str, destination: str, date: str
) -> list[list[dict[str, Any]]]:
    """Search one-stop connections open for booking: both flights on the same date, with at least
    an hour to change planes.

    Args:
        origin: IATA code of the departure airport, e.g. 'BOS'.
        destination: IATA code of the final arrival airport, e.g. 'DEN'.
        date: The departure date of both flights, 'YYYY-MM-DD'.
    """
    connections = []
    onward: dict[str, list[Flight]] = {}  # second legs by connecting airport, looked up once each
    for first in db.find(Flight, origin=origin):
        if first.destination == destination or not _open(first, date):
            continue
        if first.destination not in onward:
            legs = db.find(Flight, origin=first.destination, destination=destination)
            onward[first.destination] = [leg for leg in legs if _open(leg, date)]
        for second in onward[first.destination]:
            if _minutes(second.scheduled_departure) >= _minutes(first.scheduled_arrival) + CONNECTION_MINUTES:
                connections.append([_offer(first, date), _offer(second, date)])
    return sorted(
        connections, key=lambda pair: (pair[0]["scheduled_departure"], pair[1]["scheduled_departure"])
    )


@read_tool(public=True, returns=Flight, view=_flights_shown)
def get_flight_status(db: Database, flight_number: str, date: str) -> dict[str, Any]:
    """Get the status of a flight on a date: available, on time, delayed (with estimated times),
    cancelled, flying or landed (with actual times).

    Args:
        flight_number: The flight number, e.g. 'CB214'.
        date: The date of the flight, 'YYYY-MM-DD'.
    """
    flight = db.get(Flight, flight_number)
    day = flight.dates.get(date)
    if day is None:
        raise ToolError(f"flight {flight_number} does not operate on {date}")
    status: dict[str, Any] = {
        "flight_number": flight_number,
        "date": date,
        "origin": flight.origin,
        "destination": flight.destination,
        "scheduled_departure": flight.scheduled_departure,
        "scheduled_arrival": flight.scheduled_arrival,
    }
    status.update(day.model_dump(exclude_defaults=True))
    return status


# -- bookings --------------------------------------------------------------------------------
@write_tool
def book_reservation(
    db: Database,
    user_id: str,
    origin: str,
    destination: str,
    flight_type: Literal["one_way", "round_trip"],
    cabin: Cabin,
    flights: list[FlightRef],
    passengers: list[Passenger],
    payment_methods: list[PaymentPart],
    total_baggages: int,
    nonfree_baggages: int,
    insurance: bool,
) -> Reservation:
    """Book a new reservation for the user; every flight in the same cabin, paid in full now.

    The total is the sum of the flights' current prices times the passengers, plus 30 per
    passenger for travel insurance, plus 50 per non-free checked bag. Pay with at most one travel
    certificate, one credit card and three gift cards; the amounts must add up to the total.

    Args:
        user_id: The customer's user id, e.g. 'hana_sato_4821'.
        origin: IATA code of where the trip starts, e.g. 'BOS'.
        destination: IATA code of the trip's destination (for a round trip, the turnaround airport).
        flight_type: 'one_way' or 'round_trip'.
        cabin: 'basic_economy', 'economy' or 'business'.
        flights: Every flight of the trip, in the order flown (outbound, then return).
        passengers: Every passenger (1 to 5), with first name, last name and date of birth.
        payment_methods: The payment methods and the amount charged to each.
        total_baggages: The total number of checked bags.
        nonfree_baggages: How many of those bags are beyond the free allowance (charged 50 each).
        insurance: Whether to buy travel insurance (30 per passenger).
    """
    user = db.get(User, user_id)
    known = Knowledge(TrueFacts(db))
    for ref in flights:
        db.get(Flight, ref.flight_number)
    _refuse(
        checks.booking_problems(
            user,
            (origin, destination, flight_type),
            cabin,
            flights,
            passengers,
            payment_methods,
            total_baggages,
            nonfree_baggages,
            insurance,
            known,
        )
    )
    lines = []
    for ref in flights:
        flight, price = _bookable(db, ref, cabin, len(passengers))
        lines.append(
            ReservationFlight(
                flight_number=ref.flight_number,
                date=ref.date,
                origin=flight.origin,
                destination=flight.destination,
                price=price,
            )
        )
    for ref in flights:
        _take_seats(db, ref.flight_number, ref.date, cabin, len(passengers))
    for part in payment_methods:
        _adjust_balance(user, part.payment_id, -part.amount)
    reservation = Reservation(
        reservation_id=db.new_id("reservation"),
        user_id=user_id,
        origin=origin,
        destination=destination,
        flight_type=flight_type,
        cabin=cabin,
        flights=lines,
        passengers=passengers,
        payment_history=[  # in a canonical order: the order the agent listed them in does not matter
            Payment(payment_id=p.payment_id, amount=money(p.amount))
            for p in sorted(payment_methods, key=lambda part: part.payment_id)
        ],
        created_at=db.now,
        total_baggages=total_baggages,
        nonfree_baggages=nonfree_baggages,
        insurance=insurance,
    )
    user.reservations.append(reservation.reservation_id)
    db.insert(reservation)
    db.put(user)
    return reservation


@write_tool
def cancel_reservation(db: Database, reservation_id: str, reason: CancelReason) -> Reservation:
    """Cancel a whole reservation and refund every payment to the method it came from.

    Allowed only if it was booked within the last 24 hours, a flight of it was cancelled by the
    airline, it is in business class, or it has travel insurance and the reason is health or
    weather; never once a flight of it has departed. Gift cards and certificates are credited at
    once, credit cards within 5-7 business days.

    Args:
        reservation_id: The reservation id, e.g. 'KX4821'.
        reason: Why the customer cancels: 'change of plan', 'airline cancelled flight', 'health',
            'weather' or 'other'.
    """
    reservation = db.get(Reservation, reservation_id)
    _refuse(checks.cancel_problems(reservation, reason, Knowledge(TrueFacts(db)), db.now))
    user = db.get(User, reservation.user_id)
    net: dict[str, float] = {}
    for entry in reservation.payment_history:
        net[entry.payment_id] = money(net.get(entry.payment_id, 0.0) + entry.amount)
    for payment_id, amount in net.items():
        if amount > 0:
            _adjust_balance(user, payment_id, amount)
            reservation.payment_history.append(Payment(payment_id=payment_id, amount=-amount))
    for flight in reservation.flights:
        _take_seats(db, flight.flight_number, flight.date, reservation.cabin, -len(reservation.passengers))
    reservation.status = "cancelled"
    db.put(reservation)
    db.put(user)
    return reservation


@write_tool
def update_reservation_flights(
    db: Database, reservation_id: str, flights: list[FlightRef], payment_id: str
) -> Reservation:
    """Change the flights of a reservation, keeping its origin, destination, trip type and cabin.

    List every flight of the new itinerary, kept ones included: a kept flight keeps the price
    paid, a new one costs its current price in the reservation's cabin. The price difference for
    all passengers is charged to, or refunded to, the payment method. Basic economy flights
    cannot be changed.

    Args:
        reservation_id: The reservation id, e.g. 'KX4821'.
        flights: Every flight of the new itinerary, in the order flown.
        payment_id: The credit card or gift card id that pays or receives the price difference.
    """
    reservation = db.get(Reservation, reservation_id)
    for ref in flights:
        db.get(Flight, ref.flight_number)
    _refuse(checks.flight_change_problems(reservation, flights, payment_id, Knowledge(TrueFacts(db))))
    n = len(reservation.passengers)
    old = {(f.flight_number, f.date): f for f in reservation.flights}
    lines = []
    for ref in flights:
        kept = old.get((ref.flight_number, ref.date))
        if kept is not None:
            lines.append(kept)
            continue
        flight, price = _bookable(db, ref, reservation.cabin, n)
        lines.append(
            ReservationFlight(
                flight_number=ref.flight_number,
                date=ref.date,
                origin=flight.origin,
                destination=flight.destination,
                price=price,
            )
        )
    difference = money((sum(f.price for f in lines) - sum(f.price for f in reservation.flights)) * n)
    new_keys = {(f.flight_number, f.date) for f in lines}
    for key, dropped in old.items():
        if key not in new_keys:
            _take_seats(db, dropped.flight_number, dropped.date, reservation.cabin, -n)
    for line in lines:
        if (line.flight_number, line.date) not in old:
            _take_seats(db, line.flight_number, line.date, reservation.cabin, n)
    _settle(db, reservation, difference, payment_id)
    reservation.flights = lines
    db.put(reservation)
    return reservation


@write_tool
def update_reservation_cabin(db: Database, reservation_id: str, cabin: Cabin, payment_id: str) -> Reservation:
    """Move every flight of a reservation to another cabin (basic economy included).

    Each flight is repriced at its current price in the new cabin; the difference for all
    passengers is charged to, or refunded to, the payment method.

    Args:
        reservation_id: The reservation id, e.g. 'KX4821'.
        cabin: The new cabin: 'basic_economy', 'economy' or 'business'.
        payment_id: The credit card or gift card id that pays or receives the price difference.
    """
    reservation = db.get(Reservation, reservation_id)
    _refuse(checks.cabin_change_problems(reservation, cabin, payment_id, Knowledge(TrueFacts(db))))
    n = len(reservation.passengers)
    lines = []
    for flight in reservation.flights:
        _, price = _bookable(db, FlightRef(flight_number=flight.flight_number, date=flight.date), cabin, n)
        lines.append(flight.model_copy(update={"price": price}))
    difference = money((sum(f.price for f in lines) - sum(f.price for f in reservation.flights)) * n)
    for flight in reservation.flights:
        _take_seats(db, flight.flight_number, flight.date, reservation.cabin, -n)
        _take_seats(db, flight.flight_number, flight.date, cabin, n)
    _settle(db, reservation, difference, payment_id)
    reservation.flights = lines
    reservation.cabin = cabin
    db.put(reservation)
    return reservation


@write_tool
def update_reservation_baggages(
    db: Database,
    reservation_id: str,
    total_baggages: int,
    nonfree_baggages: int,
    payment_id: str | None = None,
) -> Reservation:
    """Add checked bags to a reservation (bags cannot be removed).

    Bags within the free allowance cost nothing; each further bag costs 50, charged to the
    payment method.

    Args:
        reservation_id: The reservation id, e.g. 'KX4821'.
        total_baggages: The new total number of checked bags.
        nonfree_baggages: How many of the total are beyond the free allowance.
        payment_id: The credit card or gift card id that pays for added non-free bags; leave it
            out when the added bags are free.
    """
    reservation = db.get(Reservation, reservation_id)
    known = Knowledge(TrueFacts(db))
    _refuse(checks.baggage_problems(reservation, total_baggages, nonfree_baggages, payment_id, known))
    charge = money((nonfree_baggages - reservation.nonfree_baggages) * BAG_PRICE)
    _settle(db, reservation, max(charge, 0.0), payment_id)
    reservation.total_baggages = total_baggages
    reservation.nonfree_baggages = nonfree_baggages
    db.put(reservation)
    return reservation


@write_tool
def update_reservation_passengers(
    db: Database, reservation_id: str, passengers: list[Passenger]
) -> Reservation:
    """Replace the passenger details of a reservation; the number of passengers cannot change.

    Args:
        reservation_id: The reservation id, e.g. 'KX4821'.
        passengers: Every passenger, in the reservation's order, with the corrected details.
    """
    reservation = db.get(Reservation, reservation_id)
    _refuse(checks.passenger_problems(reservation, passengers, Knowledge(TrueFacts(db))))
    reservation.passengers = passengers
    db.put(reservation)
    return reservation


@write_tool
def send_certificate(
    db: Database,
    user_id: str,
    reservation_id: str,
    reason: Literal["cancelled flight", "delayed flight"],
    amount: float,
) -> str:
    """Issue a travel certificate to the user as compensation for a cancelled or delayed flight of
    one of their reservations (once per reservation).

    Args:
        user_id: The customer's user id, e.g. 'hana_sato_4821'.
        reservation_id: The reservation whose flight was cancelled or delayed, e.g. 'KX4821'.
        reason: 'cancelled flight' or 'delayed flight'.
        amount: The certificate's value in dollars.
    """
    user = db.get(User, user_id)
    reservation = db.get(Reservation, reservation_id)
    _refuse(checks.certificate_problems(user_id, reservation, reason, amount, Knowledge(TrueFacts(db))))
    certificate_id = db.new_id("certificate")
    user.payment_methods[certificate_id] = Certificate(id=certificate_id, amount=money(amount))
    reservation.compensated = True
    db.put(user)
    db.put(reservation)
    return f"Certificate {certificate_id} of {money(amount):.2f} added to user {user_id}"


TOOLS = [
    verify_user_identity,
    get_user_details,
    get_reservation_details,
    list_all_airports,
    search_direct_flight,
    search_onestop_flight,
    get_flight_status,
    calculate,
    book_reservation,
    cancel_reservation,
    update_reservation_flights,
    update_reservation_cabin,
    update_reservation_baggages,
    update_reservation_passengers,
    send_certificate,
    transfer_to_human_agents,
]
