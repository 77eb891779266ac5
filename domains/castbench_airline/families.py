"""Task families: each picks entities that meet its preconditions, writes the customer's scenario
and derives the ground truth with a reference solver that follows policy.md.

A family returns a `Draft`, or `None` when the pool holds no fitting entity this draw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from random import Random
from typing import Any

from castbench.domain import (
    DraftBase,
    Fact,
    Families,
    Mention,
    Rival,
    ToolCall,
    confirm_answer,
    mention,
    spoken_list,
)
from castbench_airline.checks import (
    BAG_PRICE,
    COMPENSATION_PER_PASSENGER,
    DEPARTED,
    INSURANCE_PRICE,
    free_bags,
)
from castbench_airline.schema import (
    Cabin,
    Certificate,
    CreditCard,
    Flight,
    FlightDate,
    GiftCard,
    Passenger,
    Reservation,
    User,
    money,
)
from castbench_airline.timeline import DATES, NOW, TODAY, later, pretty_date
from castbench_airline.vocabulary import PERSONAS
from castbench_airline.world import World, random_person

__all__ = ["FAMILIES", "Draft", "Pool"]

CABIN_WORDS = {"basic_economy": "basic economy", "economy": "economy", "business": "business"}


@dataclass(kw_only=True)
class Draft(DraftBase):
    user: User

    def instructions(self) -> str:
        return self.brief(
            f"{self.user.name.first_name} {self.user.name.last_name}",
            "a customer of an airline",
            unknown="flight prices or any ids other than those above",
            answer=confirm_answer(self.confirm, declined="you want to keep things as they are"),
        )


class Pool:
    """The customers one split draws from, and the reservations and flights it already used."""

    def __init__(self, world: World, users: list[User], rng: Random) -> None:
        self.world = world
        self.users = users
        self.rng = rng
        self.used: set[str] = set()

    def pick(self, test: Callable[[User, Reservation], bool]) -> tuple[User, Reservation] | None:
        """A user's reservation passing `test` that no other task of the split uses."""
        candidates = [
            (user, reservation)
            for user in self.users
            for reservation_id in user.reservations
            if reservation_id not in self.used
            and test(user, reservation := self.world.reservations[reservation_id])
        ]
        if not candidates:
            return None
        user, reservation = self.rng.choice(candidates)
        self.used.add(reservation.reservation_id)
        return user, reservation

    def day(self, flight_number: str, date: str) -> FlightDate:
        return self.world.flights[flight_number].dates[date]

    def status(self, flight_number: str, date: str) -> str:
        return self.day(flight_number, date).status


# -- what a reply about one reservation must not claim of the others ---------------------------
GONE = ["departed", "flown", *DEPARTED]
"""How a reply says a flight has left: the reason a trip cannot be cancelled, and plain news of a
flight's status."""


def other_reservations(pool: Pool, user: User, reservation: Reservation) -> list[Reservation]:
    return [pool.world.reservations[rid] for rid in user.reservations if rid != reservation.reservation_id]


def other_totals(pool: Pool, user: User, reservation: Reservation) -> list[Mention]:
    """What the customer paid for their other reservations (whole amounts left out: "300" is any
    number): a reply naming them answers about trips the customer did not ask about."""
    totals = {
        f"{money(sum(p.amount for p in other.payment_history)):.2f}"
        for other in other_reservations(pool, user, reservation)
    }
    return [mention(total) for total in sorted(totals) if not total.endswith(".00")]


# -- predicates ------------------------------------------------------------------------------
def changeable(pool: Pool, reservation: Reservation) -> bool:
    return reservation.status == "active" and not any(
        pool.status(f.flight_number, f.date) in DEPARTED for f in reservation.flights
    )


def recent(reservation: Reservation) -> bool:
    return NOW - reservation.created_at <= timedelta(hours=24)


def airline_cancelled(pool: Pool, reservation: Reservation) -> bool:
    return any(pool.status(f.flight_number, f.date) == "cancelled" for f in reservation.flights)


def all_open(pool: Pool, reservation: Reservation, cabin: Cabin | None = None) -> bool:
    """Every flight open for booking (with seats for every passenger in `cabin`, if given)."""
    for flight in reservation.flights:
        day = pool.day(flight.flight_number, flight.date)
        if day.status != "available":
            return False
        if cabin is not None and day.available_seats.get(cabin, 0) < len(reservation.passengers):
            return False
    return True


def eligible_for_compensation(user: User, reservation: Reservation) -> bool:
    return user.membership != "regular" or reservation.insurance or reservation.cabin == "business"


def direct_legs(reservation: Reservation) -> bool:
    """One flight each way."""
    return len(reservation.flights) == (1 if reservation.flight_type == "one_way" else 2)


# -- wording ---------------------------------------------------------------------------------
def describe_method(method: CreditCard | GiftCard | Certificate) -> str:
    if isinstance(method, CreditCard):
        return f"my {method.brand} credit card ending in {method.last_four}"
    if isinstance(method, GiftCard):
        return f"my gift card ending in {method.id[-4:]}"
    return f"my travel certificate ending in {method.id[-4:]}"


def describe_trip(pool: Pool, reservation: Reservation, dated: bool = True) -> str:
    """'my round trip from Boston to Denver on May 20': how a customer names a reservation."""
    cities = {code: airport.city for code, airport in pool.world.airports.items()}
    kind = "round trip" if reservation.flight_type == "round_trip" else "trip"
    when = f" on {pretty_date(reservation.flights[0].date)}" if dated else ""
    return f"my {kind} from {cities[reservation.origin]} to {cities[reservation.destination]}{when}"


def person(passenger: Passenger) -> str:
    return f"{passenger.first_name} {passenger.last_name}"


# -- facts and calls -------------------------------------------------------------------------
def identity(user: User) -> list[Fact]:
    return [
        Fact(
            name="user_id",
            value=user.user_id,
            keywords=["user id"],
            statement=f"My user id is {user.user_id}.",
        ),
        Fact(
            name="date_of_birth",
            value=user.dob,
            keywords=["date of birth", "birth"],
            statement=f"My date of birth is {user.dob}.",
        ),
    ]


def reservation_fact(reservation: Reservation) -> Fact:
    return Fact(
        name="reservation_id",
        value=reservation.reservation_id,
        keywords=["reservation id", "reservation number", "confirmation"],
        statement=f"The reservation id is {reservation.reservation_id}.",
    )


REASON_STATEMENTS = {
    "change of plan": "My plans have changed.",
    "airline cancelled flight": "The airline cancelled my flight.",
    "health": "I'm ill and my doctor told me not to travel.",
    "weather": "A storm is forecast at my destination, so I can't travel safely.",
    "other": "It's a personal matter I'd rather not go into.",
}


def reason_fact(reason: str) -> Fact:
    return Fact(name="reason", value=reason, keywords=["reason", "why"], statement=REASON_STATEMENTS[reason])


def payment_fact(user: User, payment_id: str, purpose: str) -> Fact:
    return Fact(
        name="payment_method",
        value=payment_id,
        keywords=["payment method", "pay", "charge"],
        statement=f"For {purpose}, use {describe_method(user.payment_methods[payment_id])}.",
    )


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def verify(user: User) -> ToolCall:
    return call("verify_user_identity", user_id=user.user_id, date_of_birth=user.dob)


def start(pool: Pool, user: User, *reservations: Reservation) -> tuple[list[Fact], list[ToolCall], str]:
    facts = identity(user) + [reservation_fact(r) for r in reservations]
    return facts, [verify(user)], pool.rng.choice(PERSONAS)


def flight_refs(flights: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"flight_number": number, "date": day} for number, day in flights]


def change_method(pool: Pool, user: User, charge: float) -> str | None:
    """A credit card or gift card of the user that can take `charge` (a refund fits any)."""
    methods = [m for m in user.payment_methods.values() if not isinstance(m, Certificate)]
    methods = [m for m in methods if not (isinstance(m, GiftCard) and charge > m.amount)]
    return pool.rng.choice(methods).id if methods else None


# -- cancellations ---------------------------------------------------------------------------
_CANCELS: dict[str, tuple[Callable[[Pool, Reservation], bool], list[str]]] = {
    # family: (which changeable reservation fits, the reasons the customer may give)
    "cancel_within_24h": (
        lambda pool, r: (
            recent(r) and r.cabin != "business" and not r.insurance and not airline_cancelled(pool, r)
        ),
        ["change of plan", "other"],
    ),
    "cancel_airline_cancelled": (
        lambda pool, r: (
            airline_cancelled(pool, r) and not recent(r) and r.cabin != "business" and not r.insurance
        ),
        ["airline cancelled flight"],
    ),
    "cancel_business": (
        lambda pool, r: r.cabin == "business" and not recent(r) and not airline_cancelled(pool, r),
        ["change of plan", "other"],
    ),
    "cancel_insured": (
        lambda pool, r: (
            r.insurance and r.cabin != "business" and not recent(r) and not airline_cancelled(pool, r)
        ),
        ["health", "weather"],
    ),
}


def _cancel(family: str) -> Callable[[Pool], Draft | None]:
    fits, reasons = _CANCELS[family]

    def build(pool: Pool) -> Draft | None:
        picked = pool.pick(lambda u, r: changeable(pool, r) and fits(pool, r))
        if picked is None:
            return None
        user, reservation = picked
        reason = pool.rng.choice(reasons)
        facts, actions, persona = start(pool, user, reservation)
        checks = []
        if reason == "airline cancelled flight":
            gone = next(f for f in reservation.flights if pool.status(f.flight_number, f.date) == "cancelled")
            checks = [call("get_flight_status", flight_number=gone.flight_number, date=gone.date)]
        return Draft(
            family=family,
            outcome="change",
            user=user,
            request=f"Hi, I need to cancel {describe_trip(pool, reservation)}.",
            goal=f"cancel reservation {reservation.reservation_id} entirely and get your money back.",
            facts=[*facts, reason_fact(reason)],
            actions=[
                *actions,
                call("get_reservation_details", reservation_id=reservation.reservation_id),
                *checks,
                call("cancel_reservation", reservation_id=reservation.reservation_id, reason=reason),
            ],
            persona=persona,
        )

    return build


def refuse_cancel(pool: Pool) -> Draft | None:
    departed = pool.rng.random() < 0.3
    if departed:
        picked = pool.pick(
            lambda u, r: (
                r.status == "active"
                and r.flight_type == "round_trip"
                and pool.status(r.flights[0].flight_number, r.flights[0].date) in DEPARTED
                and any(pool.status(f.flight_number, f.date) == "available" for f in r.flights)
                and r.insurance
            )
        )
        reason = pool.rng.choice(["health", "weather"])
        why = "Part of the trip has already been flown, so it cannot be cancelled."
        because = [mention("departed", "flown", *DEPARTED)]
    else:
        picked = pool.pick(
            lambda u, r: (
                changeable(pool, r)
                and not recent(r)
                and r.cabin != "business"
                and all(pool.status(f.flight_number, f.date) == "available" for f in r.flights)
            )
        )
        why = "It was booked more than 24 hours ago, is not business class and the reason is not covered."
        because = [mention("24 hours")]
        reason = "change of plan"
    if picked is None:
        return None
    user, reservation = picked
    facts, actions, persona = start(pool, user, reservation)
    statuses = [
        call("get_flight_status", flight_number=f.flight_number, date=f.date) for f in reservation.flights
    ]
    return Draft(
        family="refuse_cancel",
        outcome="refuse",
        user=user,
        request=f"Hello, please cancel {describe_trip(pool, reservation)} and refund me.",
        goal=f"cancel reservation {reservation.reservation_id} with a refund. ({why})",
        facts=[*facts, reason_fact(reason)],
        actions=[
            *actions,
            call("get_reservation_details", reservation_id=reservation.reservation_id),
            *statuses,
        ],
        notes=["If the agent says it cannot be cancelled, accept it; you do not want any other change."],
        reasons=because,
        allowed_claims=["24 hours"],  # the cancellation rule's first condition
        persona=persona,
    )


# -- flight and cabin changes ----------------------------------------------------------------
def _new_dates(pool: Pool, reservation: Reservation, position: int) -> list[str]:
    """Other dates the flight at `position` could move to: same flight number, open for booking
    with seats for everyone, after today and still between the neighbouring flights."""
    flight = reservation.flights[position]
    options = []
    for day in DATES:
        if day <= TODAY or day == flight.date:
            continue
        if position and day <= reservation.flights[position - 1].date:
            continue
        if position + 1 < len(reservation.flights) and day >= reservation.flights[position + 1].date:
            continue
        state = pool.day(flight.flight_number, day)
        if state.status == "available" and state.available_seats.get(reservation.cabin, 0) >= len(
            reservation.passengers
        ):
            options.append(day)
    return options


def _date_changes(pool: Pool, user: User, reservation: Reservation) -> list[tuple[str, float]]:
    """(new date, price difference) for the last flight, where the user can settle the difference."""
    moved = reservation.flights[-1]
    changes = []
    for day in _new_dates(pool, reservation, len(reservation.flights) - 1):
        price = pool.day(moved.flight_number, day).prices[reservation.cabin]
        charge = money((price - moved.price) * len(reservation.passengers))
        if any(
            not isinstance(m, Certificate) and not (isinstance(m, GiftCard) and charge > m.amount)
            for m in user.payment_methods.values()
        ):
            changes.append((day, charge))
    return changes


def change_flight_date(pool: Pool) -> Draft | None:
    picked = pool.pick(
        lambda u, r: (
            changeable(pool, r)
            and r.cabin != "basic_economy"
            and direct_legs(r)
            and all_open(pool, r)
            and bool(_date_changes(pool, u, r))
        )
    )
    if picked is None:
        return None
    user, reservation = picked
    day, charge = pool.rng.choice(_date_changes(pool, user, reservation))
    method = change_method(pool, user, charge)
    assert method is not None
    moved = reservation.flights[-1]
    flights = [(f.flight_number, f.date) for f in reservation.flights]
    flights[-1] = (moved.flight_number, day)
    if reservation.flight_type == "round_trip":
        what = f"the return flight of {describe_trip(pool, reservation)}"
    else:
        what = describe_trip(pool, reservation, dated=False)
    facts, actions, persona = start(pool, user, reservation)
    return Draft(
        family="change_flight_date",
        outcome="change",
        user=user,
        request=(
            f"Hi, I'd like to move {what} from {pretty_date(moved.date)} to {pretty_date(day)}, "
            "on the same flight number."
        ),
        goal=f"in reservation {reservation.reservation_id}, move flight {moved.flight_number} from "
        f"{pretty_date(moved.date)} to {pretty_date(day)} ({day}); keep everything else.",
        facts=[*facts, payment_fact(user, method, "any price difference")],
        actions=[
            *actions,
            call("get_user_details", user_id=user.user_id),
            call("get_reservation_details", reservation_id=reservation.reservation_id),
            call("search_direct_flight", origin=moved.origin, destination=moved.destination, date=day),
            call(
                "update_reservation_flights",
                reservation_id=reservation.reservation_id,
                flights=flight_refs(flights),
                payment_id=method,
            ),
        ],
        notes=["You are happy to pay a price difference or receive a refund of it."],
        persona=persona,
    )


def refuse_change_basic_economy(pool: Pool) -> Draft | None:
    picked = pool.pick(lambda u, r: changeable(pool, r) and r.cabin == "basic_economy" and all_open(pool, r))
    if picked is None:
        return None
    user, reservation = picked
    first = reservation.flights[0]
    day = pool.rng.choice([d for d in DATES if d > TODAY and d != first.date])
    facts, actions, persona = start(pool, user, reservation)
    return Draft(
        family="refuse_change_basic_economy",
        outcome="refuse",
        user=user,
        request=f"Hello, can I move {describe_trip(pool, reservation)} to {pretty_date(day)}?",
        goal=f"move the first flight of reservation {reservation.reservation_id} to {pretty_date(day)}. "
        "It is a basic economy reservation, so its flights cannot be changed.",
        facts=facts,
        actions=[*actions, call("get_reservation_details", reservation_id=reservation.reservation_id)],
        notes=[
            "If the agent says basic economy flights cannot be changed, accept it; you do not want a cabin "
            "change or a cancellation."
        ],
        reasons=[mention("basic economy", "basic_economy")],
        persona=persona,
    )


UPGRADES: dict[Cabin, list[Cabin]] = {
    "basic_economy": ["economy", "business"],
    "economy": ["business", "business", "basic_economy"],
    "business": ["economy"],
}


def _cabin_change(pool: Pool, user: User, reservation: Reservation, cabin: Cabin) -> tuple[float, str] | None:
    new = sum(pool.day(f.flight_number, f.date).prices[cabin] for f in reservation.flights)
    charge = money((new - sum(f.price for f in reservation.flights)) * len(reservation.passengers))
    method = change_method(pool, user, charge)
    return None if method is None else (charge, method)


def _cabin_draft(pool: Pool, confirm: bool) -> Draft | None:
    target: dict[str, Cabin] = {}

    def fits(user: User, reservation: Reservation) -> bool:
        if not changeable(pool, reservation):
            return False
        cabin = pool.rng.choice(UPGRADES[reservation.cabin])
        if not all_open(pool, reservation, cabin) or _cabin_change(pool, user, reservation, cabin) is None:
            return False
        target[reservation.reservation_id] = cabin
        return True

    picked = pool.pick(fits)
    if picked is None:
        return None
    user, reservation = picked
    cabin = target[reservation.reservation_id]
    charge, method = _cabin_change(pool, user, reservation, cabin)  # type: ignore[misc]
    facts, actions, persona = start(pool, user, reservation)
    searches = [
        call("search_direct_flight", origin=f.origin, destination=f.destination, date=f.date)
        for f in reservation.flights
    ]
    n = len(reservation.passengers)
    new_total = " + ".join(str(pool.day(f.flight_number, f.date).prices[cabin]) for f in reservation.flights)
    old_total = " + ".join(str(f.price) for f in reservation.flights)
    change = call(
        "update_reservation_cabin", reservation_id=reservation.reservation_id, cabin=cabin, payment_id=method
    )
    word = CABIN_WORDS[cabin]
    return Draft(
        family="change_cabin" if confirm else "declined_confirmation",
        outcome="change" if confirm else "no_change",
        user=user,
        request=f"Hi, I'd like to switch {describe_trip(pool, reservation)} to {word}.",
        goal=f"move every flight of reservation {reservation.reservation_id} to {word}"
        + ("." if confirm else ", but decide against it once you hear the details."),
        facts=[*facts, payment_fact(user, method, "the price difference")],
        actions=[
            *actions,
            call("get_user_details", user_id=user.user_id),
            call("get_reservation_details", reservation_id=reservation.reservation_id),
            *searches,
            call("calculate", expression=f"(({new_total}) - ({old_total})) * {n}"),
            *([change] if confirm else []),
        ],
        confirm=confirm,
        declined_actions=[] if confirm else [change],
        notes=[f"The price difference is {charge:.2f} (negative means a refund); you accept it."]
        if confirm
        else [],
        offer=[] if confirm else [mention(reservation.reservation_id), mention(word, cabin)],
        offer_rivals=[]
        if confirm
        else [r.reservation_id for r in other_reservations(pool, user, reservation)],
        persona=persona,
    )


# -- bags and passengers ---------------------------------------------------------------------
def _bags(pool: Pool, paid: bool) -> Draft | None:
    plan: dict[str, tuple[int, int, str | None]] = {}

    def fits(user: User, reservation: Reservation) -> bool:
        if not changeable(pool, reservation):
            return False
        allowance = free_bags(user.membership, reservation.cabin, len(reservation.passengers))
        room = allowance - reservation.total_baggages
        if not paid:
            if room < 1:
                return False
            added = pool.rng.randint(1, min(room, 3))
            plan[reservation.reservation_id] = (added, 0, None)
            return True
        added = max(1, room + 1) + pool.rng.randint(0, 1)
        nonfree = max(0, reservation.total_baggages + added - allowance)
        charge = money((nonfree - reservation.nonfree_baggages) * BAG_PRICE)
        method = change_method(pool, user, charge)
        if method is None:
            return False
        plan[reservation.reservation_id] = (added, nonfree, method)
        return True

    picked = pool.pick(fits)
    if picked is None:
        return None
    user, reservation = picked
    added, nonfree, method = plan[reservation.reservation_id]
    total = reservation.total_baggages + added
    facts, actions, persona = start(pool, user, reservation)
    update: dict[str, Any] = {
        "reservation_id": reservation.reservation_id,
        "total_baggages": total,
        "nonfree_baggages": nonfree,
    }
    extra_facts = []
    if method is not None:
        update["payment_id"] = method
        extra_facts = [payment_fact(user, method, "the bags")]
    cost = money((nonfree - reservation.nonfree_baggages) * BAG_PRICE)
    bags = "bag" if added == 1 else "bags"
    return Draft(
        family="add_bags_paid" if paid else "add_bags_free",
        outcome="change",
        user=user,
        request=f"Hi, I'd like to add {added} checked {bags} to {describe_trip(pool, reservation)}.",
        goal=f"add {added} checked {bags} to reservation {reservation.reservation_id} ({total} in total). "
        + (f"This costs {cost:.2f}, which you accept." if paid else "They are within your free allowance."),
        facts=[*facts, *extra_facts],
        actions=[
            *actions,
            call("get_user_details", user_id=user.user_id),
            call("get_reservation_details", reservation_id=reservation.reservation_id),
            call("calculate", expression=f"{reservation.total_baggages} + {added}"),
            call("update_reservation_baggages", **update),
        ],
        persona=persona,
    )


def update_passenger(pool: Pool) -> Draft | None:
    picked = pool.pick(lambda u, r: changeable(pool, r))
    if picked is None:
        return None
    user, reservation = picked
    rng = pool.rng
    position = rng.randrange(len(reservation.passengers))
    old = reservation.passengers[position]
    kind = rng.choice(["dob", "last_name", "replace"])
    if kind == "dob":
        year, month, day = old.dob.split("-")
        new = old.model_copy(update={"dob": f"{year}-{month}-{(int(day) % 28) + 1:02d}"})
        wish = f"correct the date of birth of passenger {person(old)} to {new.dob}"
    elif kind == "last_name":
        surname = rng.choice(
            [n for n in ("Lindgren", "Marchetti", "Ferreira", "Oyelaran", "Nyberg") if n != old.last_name]
        )
        new = old.model_copy(update={"last_name": surname})
        wish = f"change the last name of passenger {person(old)} to {surname} (a name change after marriage)"
    else:
        new = random_person(rng)
        while new in reservation.passengers:
            new = random_person(rng)
        wish = f"replace passenger {person(old)} by {person(new)}, born {new.dob}"
    passengers = list(reservation.passengers)
    passengers[position] = new
    facts, actions, persona = start(pool, user, reservation)
    return Draft(
        family="update_passenger",
        outcome="change",
        user=user,
        request=f"Hello, I need to {wish} on {describe_trip(pool, reservation)}.",
        goal=f"in reservation {reservation.reservation_id}, {wish}. The other passengers stay as they are.",
        facts=facts,
        actions=[
            *actions,
            call("get_reservation_details", reservation_id=reservation.reservation_id),
            call(
                "update_reservation_passengers",
                reservation_id=reservation.reservation_id,
                passengers=[p.model_dump() for p in passengers],
            ),
        ],
        persona=persona,
    )


# -- bookings --------------------------------------------------------------------------------
def _open_flights(
    pool: Pool, origin: str, destination: str, day: str, cabin: Cabin, seats: int
) -> list[Flight]:
    return sorted(
        (
            flight
            for flight in pool.world.flights.values()
            if flight.origin == origin
            and flight.destination == destination
            and pool.status(flight.flight_number, day) == "available"
            and pool.day(flight.flight_number, day).available_seats.get(cabin, 0) >= seats
        ),
        key=lambda flight: flight.scheduled_departure,
    )


def _payments(pool: Pool, user: User, total: float) -> tuple[list[dict[str, Any]], str] | None:
    """How the customer splits the total, and how they say it."""
    card = next(m for m in user.payment_methods.values() if isinstance(m, CreditCard))
    certificates = [
        m for m in user.payment_methods.values() if isinstance(m, Certificate) and m.amount < total
    ]
    gifts = [m for m in user.payment_methods.values() if isinstance(m, GiftCard) and 0 < m.amount < total]
    options = ["card"]
    if certificates:
        options += ["certificate", "certificate"]
    if gifts:
        options += ["gift", "gift"]
    choice = pool.rng.choice(options)
    if choice == "certificate":
        cert = certificates[0]
        return (
            [
                {"payment_id": cert.id, "amount": cert.amount},
                {"payment_id": card.id, "amount": money(total - cert.amount)},
            ],
            f"use all of {describe_method(cert)} and put the rest on {describe_method(card)}",
        )
    if choice == "gift":
        used = [g for g in gifts[:3] if g.amount < total]
        paid = money(sum(g.amount for g in used))
        if paid >= total:
            used, paid = used[:1], used[0].amount
        parts = [{"payment_id": g.id, "amount": g.amount} for g in used]
        return (
            [*parts, {"payment_id": card.id, "amount": money(total - paid)}],
            f"use the whole balance of {spoken_list([describe_method(g) for g in used])} and put the rest on "
            f"{describe_method(card)}",
        )
    return [{"payment_id": card.id, "amount": total}], f"put everything on {describe_method(card)}"


def _remainder(payments: list[dict[str, Any]], total_text: str) -> list[ToolCall]:
    """When the total is split, the amount left for the card is worked out with the calculator,
    so every amount the booking uses is one the conversation showed."""
    if len(payments) < 2:
        return []
    paid = " - ".join(f"{p['amount']}" for p in payments[:-1])
    return [call("calculate", expression=f"{total_text} - {paid}")]


def _book(pool: Pool, round_trip: bool) -> Draft | None:
    rng = pool.rng
    user = rng.choice(pool.users)
    cabin: Cabin = rng.choice(["basic_economy", "economy", "economy", "business"])
    own = Passenger(first_name=user.name.first_name, last_name=user.name.last_name, dob=user.dob)
    companions = user.saved_passengers[: rng.randint(0, min(2, len(user.saved_passengers)))]
    passengers = [own, *companions]
    n = len(passengers)
    day = rng.choice([d for d in DATES if d > TODAY][:-4])
    flights_by_route = [f for f in pool.world.flights.values() if f.flight_number not in pool.used]
    outbound = rng.choice(flights_by_route)
    origin, destination = outbound.origin, outbound.destination
    going = _open_flights(pool, origin, destination, day, cabin, n)
    if outbound not in going:
        return None
    legs = [(outbound, day)]
    if round_trip:
        back_day = later(day, rng.randint(2, 4))
        coming = _open_flights(pool, destination, origin, back_day, cabin, n)
        if not coming:
            return None
        legs.append((rng.choice(coming), back_day))
    prices = [pool.day(f.flight_number, d).prices[cabin] for f, d in legs]
    insurance = rng.random() < 0.4
    allowance = free_bags(user.membership, cabin, n)
    bags = rng.randint(0, allowance + 2)
    nonfree = max(0, bags - allowance)
    total = money(sum(prices) * n + (INSURANCE_PRICE * n if insurance else 0) + BAG_PRICE * nonfree)
    split = _payments(pool, user, total)
    if split is None:
        return None
    payments, how = split
    pool.used.add(outbound.flight_number)
    expression = f"({' + '.join(map(str, prices))}) * {n}"
    if insurance:
        expression += f" + {INSURANCE_PRICE} * {n}"
    if nonfree:
        expression += f" + {BAG_PRICE} * {nonfree}"
    cities = {code: airport.city for code, airport in pool.world.airports.items()}
    who = (
        "just me"
        if not companions
        else "me and " + spoken_list([person(p) for p in companions]) + " (saved in my profile)"
    )
    times = spoken_list([f"the {f.scheduled_departure} departure on {pretty_date(d)}" for f, d in legs])
    kind = "round trip" if round_trip else "one-way trip"
    back = f", coming back on {pretty_date(legs[1][1])}" if round_trip else ""
    facts = identity(user) + [
        Fact(
            name="travel_insurance",
            value="yes" if insurance else "no",
            keywords=["insurance"],
            statement="Yes, I want travel insurance." if insurance else "No travel insurance, thanks.",
        ),
        Fact(
            name="checked_bags",
            value=str(bags),
            keywords=["bags", "baggage", "luggage"],
            statement=f"We will check {bags} bag{'s' if bags != 1 else ''} in total."
            if bags
            else "No checked bags.",
        ),
        Fact(
            name="payment_method",
            value=how,
            keywords=["payment method", "pay"],
            statement=f"For payment, {how}.",
        ),
    ]
    total_text = f"{total:.2f}"
    return Draft(
        family="book_round_trip" if round_trip else "book_one_way",
        outcome="change",
        user=user,
        request=(
            f"Hi, I'd like to book a {kind} in {CABIN_WORDS[cabin]} from {cities[origin]} to "
            f"{cities[destination]} on {pretty_date(day)}{back}, for {who}."
        ),
        goal=f"book a {kind} {origin}-{destination} in {CABIN_WORDS[cabin]}: {times} "
        f"({spoken_list([f.flight_number for f, _ in legs])}), for {who}. The total should be {total_text}.",
        facts=facts,
        actions=[
            verify(user),
            call("get_user_details", user_id=user.user_id),
            call("search_direct_flight", origin=origin, destination=destination, date=day),
            *(
                [call("search_direct_flight", origin=destination, destination=origin, date=legs[1][1])]
                if round_trip
                else []
            ),
            call("calculate", expression=expression),
            *_remainder(payments, total_text),
            call(
                "book_reservation",
                user_id=user.user_id,
                origin=origin,
                destination=destination,
                flight_type="round_trip" if round_trip else "one_way",
                cabin=cabin,
                flights=flight_refs([(f.flight_number, d) for f, d in legs]),
                passengers=[p.model_dump() for p in passengers],
                payment_methods=payments,
                total_baggages=bags,
                nonfree_baggages=nonfree,
                insurance=insurance,
            ),
        ],
        required_outputs=[total_text],
        notes=[f"You want {times}. If the agent lists several flights, pick that one."],
        persona=rng.choice(PERSONAS),
    )


# -- compensation ----------------------------------------------------------------------------
def _disrupted(pool: Pool, reservation: Reservation, status: str) -> ToolCall | None:
    for flight in reservation.flights:
        if pool.status(flight.flight_number, flight.date) == status:
            return call("get_flight_status", flight_number=flight.flight_number, date=flight.date)
    return None


def _compensation(pool: Pool, statuses: tuple[str, ...], eligible: bool) -> Draft | None:
    picked = pool.pick(
        lambda u, r: (
            r.status == "active"
            and not r.compensated
            and any(_disrupted(pool, r, status) is not None for status in statuses)
            and eligible_for_compensation(u, r) == eligible
        )
    )
    if picked is None:
        return None
    user, reservation = picked
    status = next(s for s in statuses if _disrupted(pool, reservation, s) is not None)
    check = _disrupted(pool, reservation, status)
    assert check is not None
    reason = f"{status} flight"
    amount = float(COMPENSATION_PER_PASSENGER[reason] * len(reservation.passengers))
    facts, actions, persona = start(pool, user, reservation)
    number = check.arguments["flight_number"]
    lookups = [
        *actions,
        call("get_user_details", user_id=user.user_id),
        call("get_reservation_details", reservation_id=reservation.reservation_id),
        check,
    ]
    what = "was cancelled" if status == "cancelled" else "is delayed"
    when = pretty_date(check.arguments["date"])
    request = f"Hi, my flight {number} on {when} {what}. I'd like some compensation for this."
    if eligible:
        return Draft(
            family=f"compensation_{status}",
            outcome="change",
            user=user,
            request=request,
            goal=f"get compensation for flight {number} of reservation {reservation.reservation_id}. "
            "You want nothing else changed (no cancellation, no new flights).",
            facts=facts,
            actions=[
                *lookups,
                call(
                    "calculate",
                    expression=f"{COMPENSATION_PER_PASSENGER[reason]} * {len(reservation.passengers)}",
                ),
                call(
                    "send_certificate",
                    user_id=user.user_id,
                    reservation_id=reservation.reservation_id,
                    reason=reason,
                    amount=amount,
                ),
            ],
            notes=["Accept a travel certificate as compensation."],
            persona=persona,
        )
    return Draft(
        family="refuse_compensation",
        outcome="refuse",
        user=user,
        request=request,
        goal=f"get compensation for flight {number} of reservation {reservation.reservation_id}. You are a "
        "regular member without travel insurance in economy or basic economy, so none is due.",
        facts=facts,
        actions=lookups,
        notes=["If the agent says you are not eligible, accept it; you want no other change."],
        reasons=[mention("regular", "silver or gold")],
        allowed_claims=GONE,  # news of the delayed or cancelled flight
        persona=persona,
    )


# -- a declined write ------------------------------------------------------------------------
def declined_confirmation(pool: Pool) -> Draft | None:
    if pool.rng.random() < 0.5:
        return _cabin_draft(pool, confirm=False)
    picked = pool.pick(lambda u, r: changeable(pool, r) and (recent(r) or r.cabin == "business"))
    if picked is None:
        return None
    user, reservation = picked
    reason = pool.rng.choice(["change of plan", "other"])
    facts, actions, persona = start(pool, user, reservation)
    return Draft(
        family="declined_confirmation",
        outcome="no_change",
        user=user,
        request=f"Hi, I'm thinking about cancelling {describe_trip(pool, reservation)}.",
        goal=f"consider cancelling reservation {reservation.reservation_id}, but keep it in the end.",
        facts=[*facts, reason_fact(reason)],
        actions=[*actions, call("get_reservation_details", reservation_id=reservation.reservation_id)],
        declined_actions=[
            call("cancel_reservation", reservation_id=reservation.reservation_id, reason=reason)
        ],
        confirm=False,
        offer=[mention(reservation.reservation_id), mention("cancel")],
        offer_rivals=[r.reservation_id for r in other_reservations(pool, user, reservation)],
        allowed_claims=["24 hours"],  # why it may be cancelled
        persona=persona,
    )


# -- look-ups --------------------------------------------------------------------------------
def lookup_total_paid(pool: Pool) -> Draft | None:
    picked = pool.pick(lambda u, r: r.status == "active" and len(r.payment_history) >= 2)
    if picked is None:
        return None
    user, reservation = picked
    amounts = [p.amount for p in reservation.payment_history]
    expression = " + ".join(str(a) for a in amounts)
    total = f"{money(sum(amounts)):.2f}"
    facts, actions, persona = start(pool, user, reservation)
    return Draft(
        family="lookup_total_paid",
        outcome="no_change",
        user=user,
        request=f"Hi, how much did I pay in total for {describe_trip(pool, reservation)}?",
        goal=f"learn how much you paid in total for reservation {reservation.reservation_id}. "
        "You want no changes.",
        facts=facts,
        actions=[
            *actions,
            call("get_reservation_details", reservation_id=reservation.reservation_id),
            call("calculate", expression=expression),
        ],
        required_outputs=[total],
        false_claims=other_totals(pool, user, reservation),
        persona=persona,
    )


def lookup_flight_status(pool: Pool) -> Draft | None:
    rng = pool.rng
    wanted = rng.choice(["delayed", "delayed", "landed", "cancelled"])
    day = TODAY if wanted != "landed" else rng.choice([d for d in DATES if d < TODAY])
    options = [
        f
        for f in pool.world.flights.values()
        if pool.status(f.flight_number, day) == wanted and f"{f.flight_number}@{day}" not in pool.used
    ]
    if not options:
        return None
    flight = rng.choice(options)
    pool.used.add(f"{flight.flight_number}@{day}")
    state = pool.day(flight.flight_number, day)
    if wanted == "delayed":
        outputs = [state.estimated_departure or ""]
        learn = "whether it is on time and, if not, when it is now expected to leave"
    elif wanted == "landed":
        outputs = [state.actual_arrival or ""]
        learn = "when it actually landed"
    else:
        outputs = ["cancelled"]
        learn = "whether it is still operating"
    when = "today" if day == TODAY else f"on {pretty_date(day)}"
    user = rng.choice(pool.users)
    return Draft(
        family="lookup_flight_status",
        outcome="no_change",
        user=user,
        request=f"Hello, could you check the status of a flight {when} for me?",
        goal=f"learn the status of flight {flight.flight_number} {when} ({day}): {learn}. "
        "You want no changes and need no account help.",
        facts=[
            Fact(
                name="flight_number",
                value=flight.flight_number,
                keywords=["flight number", "which flight"],
                statement=f"It's flight {flight.flight_number}.",
            )
        ],
        actions=[call("get_flight_status", flight_number=flight.flight_number, date=day)],
        required_outputs=outputs,
        allowed_claims=GONE,
        persona=rng.choice(PERSONAS),
    )


def lookup_cheapest_flight(pool: Pool) -> Draft | None:
    rng = pool.rng
    day = rng.choice([d for d in DATES if d > TODAY])
    cabin: Cabin = rng.choice(["economy", "business", "basic_economy"])
    flight = rng.choice(list(pool.world.flights.values()))
    offers = [
        (pool.day(f.flight_number, day).prices[cabin], f)
        for f in _open_flights(pool, flight.origin, flight.destination, day, cabin, 1)
    ]
    if len(offers) < 2 or len({price for price, _ in offers}) < len(offers):
        return None
    price, cheapest = min(offers, key=lambda offer: offer[0])
    key = f"cheapest:{flight.origin}-{flight.destination}@{day}"
    if key in pool.used:
        return None
    pool.used.add(key)
    cities = {code: airport.city for code, airport in pool.world.airports.items()}
    user = rng.choice(pool.users)
    return Draft(
        family="lookup_cheapest_flight",
        outcome="no_change",
        user=user,
        request=(
            f"Hi, which is the cheapest direct {CABIN_WORDS[cabin]} flight from {cities[flight.origin]} to "
            f"{cities[flight.destination]} on {pretty_date(day)}, and what does it cost?"
        ),
        goal=f"learn the cheapest direct {CABIN_WORDS[cabin]} flight {flight.origin}-{flight.destination} on "
        f"{day} and its price. You only want the information; do not book anything.",
        facts=[],
        actions=[
            call("list_all_airports"),
            call("search_direct_flight", origin=flight.origin, destination=flight.destination, date=day),
        ],
        required_outputs=[cheapest.flight_number, str(price)],
        rivals=[
            Rival(
                output=cheapest.flight_number,
                others=[f.flight_number for _, f in offers if f is not cheapest],
            ),
            Rival(output=str(price), others=[str(p) for p, f in offers if f is not cheapest]),
        ],
        persona=rng.choice(PERSONAS),
    )


FAMILIES: Families[Pool, Draft] = {
    # family: (builder, test count, train count)
    "cancel_within_24h": (_cancel("cancel_within_24h"), 3, 12),
    "cancel_airline_cancelled": (_cancel("cancel_airline_cancelled"), 3, 12),
    "cancel_business": (_cancel("cancel_business"), 3, 12),
    "cancel_insured": (_cancel("cancel_insured"), 3, 12),
    "refuse_cancel": (refuse_cancel, 4, 14),
    "change_flight_date": (change_flight_date, 4, 16),
    "refuse_change_basic_economy": (refuse_change_basic_economy, 3, 12),
    "change_cabin": (partial(_cabin_draft, confirm=True), 4, 14),
    "add_bags_free": (partial(_bags, paid=False), 2, 9),
    "add_bags_paid": (partial(_bags, paid=True), 3, 10),
    "update_passenger": (update_passenger, 3, 12),
    "book_one_way": (partial(_book, round_trip=False), 4, 14),
    "book_round_trip": (partial(_book, round_trip=True), 3, 12),
    "compensation_cancelled": (partial(_compensation, statuses=("cancelled",), eligible=True), 2, 9),
    "compensation_delayed": (partial(_compensation, statuses=("delayed",), eligible=True), 2, 8),
    "refuse_compensation": (partial(_compensation, statuses=("delayed", "cancelled"), eligible=False), 3, 10),
    "declined_confirmation": (declined_confirmation, 3, 12),
    "lookup_total_paid": (lookup_total_paid, 2, 8),
    "lookup_flight_status": (lookup_flight_status, 2, 8),
    "lookup_cheapest_flight": (lookup_cheapest_flight, 2, 6),
}
