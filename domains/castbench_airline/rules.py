"""Executable policy rules for the rules critic and the labeler.

Both run the same checks as the tools (`checks`), through a `Knowledge` of the harness's facts:
the labeler on the true state (`TrueFacts`), the deployed critic on what earlier tool results
showed the agent (`ObservedFacts`: which record a result holds is its tool's metadata). Which
check a proposed write gets is looked up by the tool it calls, not by the name it is offered
under, so a renamed tool keeps its rules. Identity, order of authentication and confirmation
before writes are checked by the harness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from castbench.domain import (
    Database,
    DomainRules,
    Facts,
    ObservedCall,
    ObservedFacts,
    RuleFinding,
    ToolCall,
    Toolkit,
    TrueFacts,
)
from castbench_airline import checks, tools
from castbench_airline.checks import Knowledge
from castbench_airline.schema import FlightRef, Passenger, PaymentPart, Reservation
from castbench_airline.timeline import NOW
from castbench_airline.vocabulary import REASON_SYNONYMS

__all__ = ["AirlineRules"]

Arguments = dict[str, Any]


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


def _booking(args: Arguments, known: Knowledge) -> list[str]:
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


def _cancel(args: Arguments, reservation: Reservation, known: Knowledge) -> list[str]:
    return checks.cancel_problems(reservation, str(args.get("reason")), known, NOW)


def _flights(args: Arguments, reservation: Reservation, known: Knowledge) -> list[str]:
    flights = _items(FlightRef, args.get("flights"))
    if flights is None:
        return []
    return checks.flight_change_problems(reservation, flights, str(args.get("payment_id")), known)


def _cabin(args: Arguments, reservation: Reservation, known: Knowledge) -> list[str]:
    cabin = args.get("cabin")
    if cabin not in ("basic_economy", "economy", "business"):
        return []  # the schema check reports it
    return checks.cabin_change_problems(reservation, cabin, str(args.get("payment_id")), known)


def _baggages(args: Arguments, reservation: Reservation, known: Knowledge) -> list[str]:
    payment_id = args.get("payment_id")
    return checks.baggage_problems(
        reservation,
        int(args.get("total_baggages", 0)),
        int(args.get("nonfree_baggages", 0)),
        None if payment_id is None else str(payment_id),
        known,
    )


def _passengers(args: Arguments, reservation: Reservation, known: Knowledge) -> list[str]:
    passengers = _items(Passenger, args.get("passengers"))
    return [] if passengers is None else checks.passenger_problems(reservation, passengers, known)


def _certificate(args: Arguments, reservation: Reservation, known: Knowledge) -> list[str]:
    return checks.certificate_problems(
        str(args.get("user_id")), reservation, str(args.get("reason")), float(args.get("amount", 0)), known
    )


_ON_RESERVATION: dict[Callable[..., Any], Callable[[Arguments, Reservation, Knowledge], list[str]]] = {
    tools.cancel_reservation.function: _cancel,
    tools.update_reservation_flights.function: _flights,
    tools.update_reservation_cabin.function: _cabin,
    tools.update_reservation_baggages.function: _baggages,
    tools.update_reservation_passengers.function: _passengers,
    tools.send_certificate.function: _certificate,
}
"""The checks of the writes on a reservation, by the tool's function (whatever it is named)."""


class AirlineRules(DomainRules):
    reason_synonyms = REASON_SYNONYMS

    def __init__(self, toolkit: Toolkit) -> None:
        super().__init__(toolkit)
        self.tools = toolkit

    def problems(self, call: ToolCall, facts: Facts) -> list[str]:
        """What the policy's checkable rules find wrong with a write, judged on `facts`."""
        tool = self.tools.get(call.name)
        if tool is None:
            return []
        known, args = Knowledge(facts), call.arguments
        if tool.function is tools.book_reservation.function:
            return _booking(args, known)
        check = _ON_RESERVATION.get(tool.function)
        reservation = known.reservation(str(args.get("reservation_id"))) if check else None
        return [] if check is None or reservation is None else check(args, reservation, known)

    def _findings(self, call: ToolCall, facts: Facts) -> list[RuleFinding]:
        try:
            found = self.problems(call, facts)
        except (TypeError, ValueError, KeyError):  # malformed arguments: the tool's validation reports them
            return []
        return [RuleFinding("domain_violation", why) for why in found]

    def visible_findings(self, call: ToolCall, observed: list[ObservedCall]) -> list[RuleFinding]:
        return self._findings(call, ObservedFacts(self.tools, observed))

    def state_findings(self, call: ToolCall, db: Database) -> list[RuleFinding]:
        return self._findings(call, TrueFacts(db))
