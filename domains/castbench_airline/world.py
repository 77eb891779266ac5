"""The seed state: airports, a flight network with a status per date, customers and their
reservations, drawn from one `random.Random`."""

from __future__ import annotations

import itertools
import string
from dataclasses import dataclass, field
from datetime import timedelta
from random import Random

from castbench.domain import SEQUENCES_TABLE, Row
from castbench_airline.checks import BAG_PRICE, INSURANCE_PRICE, free_bags
from castbench_airline.schema import (
    Airport,
    Cabin,
    Certificate,
    CreditCard,
    Flight,
    FlightDate,
    FlightType,
    GiftCard,
    Membership,
    Name,
    Passenger,
    Payment,
    Reservation,
    ReservationFlight,
    User,
    money,
)
from castbench_airline.timeline import DATES, NOW, TODAY, departure_time, later
from castbench_airline.vocabulary import AIRPORTS, CARD_BRANDS, EMAIL_DOMAINS, FIRST_NAMES, LAST_NAMES

__all__ = ["NEW_RESERVATION_PREFIX", "World", "build_world", "random_person"]

N_USERS = 300
N_ROUTE_PAIRS = 110
N_FLIGHTS = 300
NOW_MINUTES = NOW.hour * 60 + NOW.minute
NEW_RESERVATION_PREFIX = "NB"
CABIN_WEIGHTS: dict[Cabin, int] = {"basic_economy": 30, "economy": 50, "business": 20}
MEMBERSHIP_WEIGHTS: dict[Membership, int] = {"regular": 45, "silver": 33, "gold": 22}


@dataclass
class World:
    airports: dict[str, Airport]
    flights: dict[str, Flight]
    users: dict[str, User]
    reservations: dict[str, Reservation]
    base_price: dict[str, int] = field(default_factory=dict)
    """Economy base price per flight number (the generator's memory, not state)."""

    def state(self) -> dict[str, dict[str, Row]]:
        """table -> key -> row, as `data/state.json` stores it."""
        return {
            "airports": {key: row.model_dump(mode="json") for key, row in self.airports.items()},
            "flights": {
                key: row.model_dump(mode="json", exclude_defaults=True) for key, row in self.flights.items()
            },
            "users": {key: row.model_dump(mode="json") for key, row in self.users.items()},
            "reservations": {key: row.model_dump(mode="json") for key, row in self.reservations.items()},
            SEQUENCES_TABLE: {
                "reservation": {"next": 1001, "prefix": NEW_RESERVATION_PREFIX, "width": 4},
                "certificate": {"next": 8000001, "prefix": "certificate_", "width": 7},
            },
        }


def _hhmm(minutes: int) -> str:
    minutes = min(minutes, 23 * 60 + 59)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _minutes(hhmm: str) -> int:
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)


class _Ids:
    def __init__(self, rng: Random) -> None:
        self._rng = rng
        self._seen: set[str] = set()

    def unique(self, make: str) -> str:
        """`make` is a pattern: 'L' a capital letter, 'D' a digit, 'F' a digit 1-7."""
        while True:
            value = "".join(
                self._rng.choice(string.ascii_uppercase)
                if ch == "L"
                else str(self._rng.randint(1, 7))
                if ch == "F"
                else str(self._rng.randrange(10))
                if ch == "D"
                else ch
                for ch in make
            )
            if value not in self._seen and not value.startswith(NEW_RESERVATION_PREFIX):
                self._seen.add(value)
                return value


def random_person(rng: Random) -> Passenger:
    return Passenger(
        first_name=rng.choice(FIRST_NAMES),
        last_name=rng.choice(LAST_NAMES),
        dob=f"{rng.randint(1948, 2016)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
    )


# -- flights ---------------------------------------------------------------------------------
def _day(rng: Random, day: str, departure: str, arrival: str, base: int) -> FlightDate:
    dep, arr = _minutes(departure), _minutes(arrival)
    if day < TODAY or (day == TODAY and dep < NOW_MINUTES):
        if rng.random() < 0.06:
            return FlightDate(status="cancelled")
        late = rng.choice([0, 0, 5, 10, 15, 25, 40])
        actual_dep, actual_arr = dep + late, arr + late + rng.randint(-10, 10)
        if day == TODAY and actual_arr > NOW_MINUTES:
            return FlightDate(status="flying", actual_departure=_hhmm(actual_dep))
        return FlightDate(
            status="landed", actual_departure=_hhmm(actual_dep), actual_arrival=_hhmm(actual_arr)
        )
    if day == TODAY:
        roll = rng.random()
        if roll < 0.15:
            return FlightDate(status="cancelled")
        if roll < 0.6:
            delay = rng.choice([30, 45, 60, 90, 120, 150, 180, 240])
            return FlightDate(
                status="delayed", estimated_departure=_hhmm(dep + delay), estimated_arrival=_hhmm(arr + delay)
            )
        return FlightDate(status="on time")
    if rng.random() < 0.07:
        return FlightDate(status="cancelled")
    economy = round(base * rng.uniform(0.85, 1.25))
    return FlightDate(
        status="available",
        available_seats={
            "basic_economy": rng.randint(0, 16),
            "economy": rng.randint(0, 20),
            "business": rng.randint(0, 9),
        },
        prices={
            "basic_economy": round(economy * rng.uniform(0.55, 0.7)),
            "economy": economy,
            "business": round(economy * rng.uniform(2.2, 3.0)),
        },
    )


def _flights(rng: Random, ids: _Ids) -> tuple[dict[str, Flight], dict[str, int]]:
    codes = [code for code, _, _ in AIRPORTS]
    pairs = rng.sample(list(itertools.combinations(codes, 2)), N_ROUTE_PAIRS)
    routes: list[tuple[str, str, int]] = []
    for a, b in pairs:
        duration = rng.randrange(60, 335, 5)
        routes += [(a, b, duration), (b, a, duration + rng.choice([-10, -5, 0, 5, 10]))]
    routes += [rng.choice(routes) for _ in range(N_FLIGHTS - len(routes))]
    flights: dict[str, Flight] = {}
    base_price: dict[str, int] = {}
    for origin, destination, duration in routes:
        number = ids.unique("CBDDD")
        departure = rng.randrange(6 * 60, 21 * 60, 5)
        departure = min(departure, 23 * 60 + 55 - duration)
        base = round(70 + duration * 0.9 * rng.uniform(0.85, 1.2))
        dep, arr = _hhmm(departure), _hhmm(departure + duration)
        flights[number] = Flight(
            flight_number=number,
            origin=origin,
            destination=destination,
            scheduled_departure=dep,
            scheduled_arrival=arr,
            dates={day: _day(rng, day, dep, arr, base) for day in DATES},
        )
        base_price[number] = base
    return dict(sorted(flights.items())), base_price


# -- users -----------------------------------------------------------------------------------
def _users(rng: Random, ids: _Ids) -> dict[str, User]:
    users: dict[str, User] = {}
    while len(users) < N_USERS:
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        methods: dict[str, CreditCard | GiftCard | Certificate] = {}
        for _ in range(rng.choice([1, 1, 1, 2])):
            card_id = f"credit_card_{ids.unique('FDDDDDD')}"
            methods[card_id] = CreditCard(
                id=card_id, brand=rng.choice(CARD_BRANDS), last_four=f"{rng.randint(0, 9999):04d}"
            )
        for _ in range(rng.choice([0, 1, 1, 2])):
            gift_id = f"gift_card_{ids.unique('FDDDDDD')}"
            methods[gift_id] = GiftCard(id=gift_id, amount=money(rng.uniform(40, 450)))
        if rng.random() < 0.45:
            cert_id = f"certificate_{ids.unique('FDDDDDD')}"
            methods[cert_id] = Certificate(
                id=cert_id, amount=float(rng.choice([100, 150, 200, 250, 300, 500]))
            )
        user_id = f"{first.lower()}_{last.lower()}_{ids.unique('DDDD')}"
        users[user_id] = User(
            user_id=user_id,
            name=Name(first_name=first, last_name=last),
            email=f"{first.lower()}.{last.lower()}{rng.randint(10, 99)}@{rng.choice(EMAIL_DOMAINS)}",
            dob=f"{rng.randint(1950, 2004)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            membership=rng.choices(list(MEMBERSHIP_WEIGHTS), weights=list(MEMBERSHIP_WEIGHTS.values()))[0],
            payment_methods=methods,
            saved_passengers=[random_person(rng) for _ in range(rng.choice([0, 1, 1, 2, 3]))],
            reservations=[],
        )
    return users


# -- reservations ----------------------------------------------------------------------------
class _Network:
    def __init__(self, flights: dict[str, Flight]) -> None:
        self.flights = list(flights.values())
        self.by_route: dict[tuple[str, str], list[Flight]] = {}
        self.by_origin: dict[str, list[Flight]] = {}
        for flight in self.flights:
            self.by_route.setdefault((flight.origin, flight.destination), []).append(flight)
            self.by_origin.setdefault(flight.origin, []).append(flight)

    def connections(self, first: Flight, final: str | None = None) -> list[Flight]:
        ready = _minutes(first.scheduled_arrival) + 60
        return [
            second
            for second in self.by_origin.get(first.destination, [])
            if second.destination != first.origin
            and (final is None or second.destination == final)
            and _minutes(second.scheduled_departure) >= ready
        ]

    def path(self, rng: Random, origin: str, destination: str) -> list[Flight] | None:
        direct = self.by_route.get((origin, destination))
        if direct:
            return [rng.choice(direct)]
        pairs = [[f, s] for f in self.by_origin.get(origin, []) for s in self.connections(f, destination)]
        return rng.choice(pairs) if pairs else None


def _price(world: World, flight: Flight, day: str, cabin: Cabin, rng: Random) -> int:
    offered = flight.dates[day].prices.get(cabin)
    if offered is not None:
        return offered
    economy = world.base_price[flight.flight_number] * rng.uniform(0.85, 1.25)
    factor = {"basic_economy": rng.uniform(0.55, 0.7), "economy": 1.0, "business": rng.uniform(2.2, 3.0)}[
        cabin
    ]
    return round(economy * factor)


def _itinerary(rng: Random, network: _Network) -> tuple[FlightType, list[tuple[Flight, str]]] | None:
    weights = [
        6 if day == TODAY else 2 if abs(DATES.index(day) - DATES.index(TODAY)) <= 3 else 1 for day in DATES
    ]
    day = rng.choices(DATES, weights=weights)[0]
    first = rng.choice(network.flights)
    outbound = [first]
    if rng.random() < 0.25:
        onward = network.connections(first)
        if onward:
            outbound.append(rng.choice(onward))
    origin, destination = outbound[0].origin, outbound[-1].destination
    legs = [(flight, day) for flight in outbound]
    if rng.random() < 0.4:
        back_day = later(day, rng.randint(1, 5))
        back = network.path(rng, destination, origin) if back_day <= DATES[-1] else None
        if back:
            return "round_trip", legs + [(flight, back_day) for flight in back]
    return "one_way", legs


def _reservation(rng: Random, ids: _Ids, world: World, network: _Network, user: User) -> Reservation:
    flight_type, legs = _itinerary(rng, network)  # type: ignore[misc]
    cabin: Cabin = rng.choices(list(CABIN_WEIGHTS), weights=list(CABIN_WEIGHTS.values()))[0]
    count = rng.choices([1, 2, 3, 4, 5], weights=[45, 30, 15, 7, 3])[0]
    own = Passenger(first_name=user.name.first_name, last_name=user.name.last_name, dob=user.dob)
    people = ([own] if rng.random() < 0.75 else []) + list(user.saved_passengers)
    while len(people) < count:
        people.append(random_person(rng))
    passengers = people[:count]
    first_departure = departure_time(legs[0][1], legs[0][0].scheduled_departure)
    if first_departure > NOW and rng.random() < 0.12:
        created = NOW - timedelta(minutes=rng.randint(30, 23 * 60 + 30))
    else:
        created = min(NOW, first_departure) - timedelta(minutes=rng.randint(25 * 60, 40 * 24 * 60))
    flights = [
        ReservationFlight(
            flight_number=flight.flight_number,
            date=day,
            origin=flight.origin,
            destination=flight.destination,
            price=_price(world, flight, day, cabin, rng),
        )
        for flight, day in legs
    ]
    insurance = rng.random() < 0.35
    allowance = free_bags(user.membership, cabin, count)
    total_bags = rng.randint(0, allowance + 2)
    nonfree = max(0, total_bags - allowance)
    total = money(
        sum(f.price for f in flights) * count
        + (INSURANCE_PRICE * count if insurance else 0)
        + BAG_PRICE * nonfree
    )
    card = next(m.id for m in user.payment_methods.values() if isinstance(m, CreditCard))
    others = [m.id for m in user.payment_methods.values() if not isinstance(m, CreditCard)]
    payments = [Payment(payment_id=card, amount=total)]
    if others and rng.random() < 0.4:
        share = money(round(total * rng.uniform(0.2, 0.6)))
        payments = [
            Payment(payment_id=rng.choice(others), amount=share),
            Payment(payment_id=card, amount=money(total - share)),
        ]
    reservation = Reservation(
        reservation_id=ids.unique("LLDDDD"),
        user_id=user.user_id,
        origin=flights[0].origin,
        destination=legs[-1][0].destination if flight_type == "one_way" else _turnaround(flights),
        flight_type=flight_type,
        cabin=cabin,
        flights=flights,
        passengers=passengers,
        payment_history=payments,
        created_at=created.replace(second=0, microsecond=0),
        total_baggages=total_bags,
        nonfree_baggages=nonfree,
        insurance=insurance,
    )
    if rng.random() < 0.04:
        reservation.status = "cancelled"
        reservation.payment_history += [Payment(payment_id=p.payment_id, amount=-p.amount) for p in payments]
    return reservation


def _turnaround(flights: list[ReservationFlight]) -> str:
    """Where a round trip turns back: the arrival before the first date change."""
    for current, following in itertools.pairwise(flights):
        if following.date != current.date:
            return current.destination
    return flights[-1].destination


def build_world(rng: Random) -> World:
    ids = _Ids(rng)
    airports = {code: Airport(iata=code, city=city, name=name) for code, city, name in AIRPORTS}
    flights, base_price = _flights(rng, ids)
    users = _users(rng, ids)
    world = World(airports=airports, flights=flights, users=users, reservations={}, base_price=base_price)
    network = _Network(flights)
    for user in users.values():
        for _ in range(rng.choice([1, 2, 2, 3, 3, 3, 4, 4, 5, 6])):
            reservation = _reservation(rng, ids, world, network, user)
            world.reservations[reservation.reservation_id] = reservation
            user.reservations.append(reservation.reservation_id)
    return world
