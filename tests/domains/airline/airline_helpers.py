"""Finding seed entities with given properties, for the airline tool and rules tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from castbench.domain import Database
from castbench_airline.schema import Flight, GiftCard, Reservation, User
from castbench_airline.timeline import NOW


def status(db: Database, flight_number: str, date: str) -> str:
    return db.get(Flight, flight_number).dates[date].status


def open_for_changes(db: Database, reservation: Reservation) -> bool:
    return reservation.status == "active" and all(
        status(db, f.flight_number, f.date) == "available" for f in reservation.flights
    )


def old(reservation: Reservation) -> bool:
    return NOW - reservation.created_at > timedelta(hours=24)


def find(db: Database, test: Callable[[Reservation], bool]) -> Reservation:
    return next(r for r in sorted(db.scan(Reservation), key=lambda r: r.reservation_id) if test(r))


def card(db: Database, reservation: Reservation) -> str:
    user = db.get(User, reservation.user_id)
    return next(m.id for m in user.payment_methods.values() if m.source == "credit_card")


def gift_card(db: Database, reservation: Reservation) -> GiftCard | None:
    user = db.get(User, reservation.user_id)
    return next((m for m in user.payment_methods.values() if isinstance(m, GiftCard)), None)
