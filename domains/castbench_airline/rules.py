"""Executable policy rules for the rules critic and the labeler.

Both run the same checks as the tools (`checks`): the labeler on the true state, the deployed
critic on what earlier tool results showed the agent (`ObservedKnowledge`). Identity, order of
authentication and confirmation before writes are checked by the harness.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from castbench.domain import Database, DomainRules, ObservedCall, RuleFinding, ToolCall
from castbench_airline import checks
from castbench_airline.checks import DbKnowledge, Knowledge
from castbench_airline.schema import Cabin, FlightRef, FlightStatus, Passenger, PaymentPart, Reservation, User
from castbench_airline.timeline import NOW

__all__ = ["AirlineRules", "ObservedKnowledge"]


class ObservedKnowledge:
    """What the agent has seen: the latest reservation and user records, flight statuses, routes and
    prices that successful tool results showed."""

    def __init__(self, observed: list[ObservedCall]) -> None:
        self._reservations: dict[str, Reservation] = {}
        self._users: dict[str, User] = {}
        self._status: dict[tuple[str, str], FlightStatus] = {}
        self._routes: dict[str, tuple[str, str]] = {}
        self._prices: dict[tuple[str, str, str], int] = {}
        for call in observed:
            if not call.error:
                self._learn(call.result())

    def _learn(self, result: Any) -> None:
        if isinstance(result, list):
            for item in result:
                self._learn(item)
            return
        if not isinstance(result, dict):
            return
        if "reservation_id" in result and "passengers" in result:
            reservation = _parse(Reservation, result)
            if reservation is not None:
                self._reservations[reservation.reservation_id] = reservation
        elif "user_id" in result and "membership" in result:
            user = _parse(User, result)
            if user is not None:
                self._users[user.user_id] = user
        elif "flight_number" in result and "origin" in result and "destination" in result:
            number = str(result["flight_number"])
            self._routes[number] = (str(result["origin"]), str(result["destination"]))
            day = result.get("date")
            if isinstance(day, str):
                status = result.get("status", "available" if "prices" in result else None)
                if status is not None:
                    self._status[(number, day)] = status
                for cabin, price in (result.get("prices") or {}).items():
                    self._prices[(number, day, cabin)] = int(price)

    def reservation(self, reservation_id: str) -> Reservation | None:
        return self._reservations.get(reservation_id)

    def user(self, user_id: str) -> User | None:
        return self._users.get(user_id)

    def flight_status(self, flight_number: str, date: str) -> FlightStatus | None:
        return self._status.get((flight_number, date))

    def route(self, flight_number: str) -> tuple[str, str] | None:
        return self._routes.get(flight_number)

    def price(self, flight_number: str, date: str, cabin: Cabin) -> int | None:
        return self._prices.get((flight_number, date, cabin))


def _parse(model: type[BaseModel], data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def _items(model: type[BaseModel], values: Any) -> list[Any] | None:
    if not isinstance(values, list):
        return None
    parsed = [_parse(model, value) if isinstance(value, dict) else None for value in values]
    return None if None in parsed else parsed


def problems(call: ToolCall, known: Knowledge) -> list[str]:
    """What the policy's checkable rules find wrong with a write, judged on `known`."""
    args = call.arguments
    if call.name == "book_reservation":
        flights = _items(FlightRef, args.get("flights"))
        passengers = _items(Passenger, args.get("passengers"))
        payments = _items(PaymentPart, args.get("payment_methods"))
        if flights is None or passengers is None or payments is None:
            return []
        trip = (str(args.get("origin")), str(args.get("destination")), str(args.get("flight_type")))
        return checks.booking_problems(
            known.user(str(args.get("user_id"))),
            trip,
            args.get("cabin", "economy"),
            flights,
            passengers,
            payments,
            int(args.get("total_baggages", 0)),
            int(args.get("nonfree_baggages", 0)),
            bool(args.get("insurance")),
            known,
        )
    reservation = known.reservation(str(args.get("reservation_id")))
    if reservation is None:
        return []
    if call.name == "cancel_reservation":
        return checks.cancel_problems(reservation, str(args.get("reason")), known, NOW)
    if call.name == "update_reservation_flights":
        flights = _items(FlightRef, args.get("flights"))
        if flights is None:
            return []
        return checks.flight_change_problems(reservation, flights, str(args.get("payment_id")), known)
    if call.name == "update_reservation_cabin":
        cabin = args.get("cabin")
        if cabin not in ("basic_economy", "economy", "business"):
            return []  # the schema check reports it
        return checks.cabin_change_problems(reservation, cabin, str(args.get("payment_id")), known)
    if call.name == "update_reservation_baggages":
        payment_id = args.get("payment_id")
        return checks.baggage_problems(
            reservation,
            int(args.get("total_baggages", 0)),
            int(args.get("nonfree_baggages", 0)),
            None if payment_id is None else str(payment_id),
            known,
        )
    if call.name == "update_reservation_passengers":
        passengers = _items(Passenger, args.get("passengers"))
        return [] if passengers is None else checks.passenger_problems(reservation, passengers, known)
    if call.name == "send_certificate":
        return checks.certificate_problems(
            str(args.get("user_id")),
            reservation,
            str(args.get("reason")),
            float(args.get("amount", 0)),
            known,
        )
    return []


class AirlineRules(DomainRules):
    auth_tools = frozenset({"verify_user_identity"})
    public_tools = frozenset(
        {
            "list_all_airports",
            "search_direct_flight",
            "search_onestop_flight",
            "get_flight_status",
            "calculate",
            "transfer_to_human_agents",
        }
    )

    def visible_findings(self, call: ToolCall, observed: list[ObservedCall]) -> list[RuleFinding]:
        return _findings(call, ObservedKnowledge(observed))

    def state_findings(self, call: ToolCall, db: Database) -> list[RuleFinding]:
        return _findings(call, DbKnowledge(db))


def _findings(call: ToolCall, known: Knowledge) -> list[RuleFinding]:
    try:
        found = problems(call, known)
    except (TypeError, ValueError, KeyError):  # malformed arguments: the tool's validation reports them
        return []
    return [RuleFinding("domain_violation", why) for why in found]
