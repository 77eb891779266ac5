"""The airline's records: airports, flights (with a status per date), customers and reservations.

Times are UTC, written "HH:MM"; dates are "YYYY-MM-DD". Prices are whole dollars per passenger and
flight; payment amounts are floats rounded to cents (`money()`); a refund is a negative payment.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from castbench.domain import Record

__all__ = [
    "CABINS",
    "Airport",
    "Cabin",
    "Certificate",
    "CreditCard",
    "Flight",
    "FlightDate",
    "FlightRef",
    "FlightStatus",
    "FlightType",
    "GiftCard",
    "Membership",
    "Name",
    "Passenger",
    "Payment",
    "PaymentMethod",
    "PaymentPart",
    "Reservation",
    "ReservationFlight",
    "User",
    "money",
]

Cabin = Literal["basic_economy", "economy", "business"]
CABINS: tuple[Cabin, ...] = ("basic_economy", "economy", "business")
FlightStatus = Literal["available", "on time", "delayed", "cancelled", "flying", "landed"]
"""`available`: open for booking; `on time`/`delayed`: departing later today; `flying`/`landed`:
departed (a reservation with such a flight can no longer be changed or cancelled)."""
FlightType = Literal["one_way", "round_trip"]
Membership = Literal["regular", "silver", "gold"]


def money(amount: float) -> float:
    """An amount rounded to cents (the one rounding rule of the domain)."""
    return round(amount + 0.0, 2)


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Airport(Record):
    table: ClassVar[str] = "airports"
    key_field: ClassVar[str] = "iata"

    iata: str
    city: str
    name: str


class FlightDate(_Part):
    """One flight on one date."""

    status: FlightStatus
    available_seats: dict[Cabin, int] = Field(default_factory=dict)
    """Only while `available`."""
    prices: dict[Cabin, int] = Field(default_factory=dict)
    """Price per passenger, only while `available`."""
    estimated_departure: str | None = None
    """Only when `delayed`."""
    estimated_arrival: str | None = None
    actual_departure: str | None = None
    """Once it departed (`flying`, `landed`)."""
    actual_arrival: str | None = None


class Flight(Record):
    table: ClassVar[str] = "flights"
    key_field: ClassVar[str] = "flight_number"

    flight_number: str
    origin: str
    destination: str
    scheduled_departure: str
    scheduled_arrival: str
    dates: dict[str, FlightDate]


class Name(_Part):
    first_name: str
    last_name: str


class CreditCard(_Part):
    source: Literal["credit_card"] = "credit_card"
    id: str
    brand: str
    last_four: str


class GiftCard(_Part):
    source: Literal["gift_card"] = "gift_card"
    id: str
    amount: float
    """Remaining balance."""


class Certificate(_Part):
    source: Literal["certificate"] = "certificate"
    id: str
    amount: float
    """Remaining value."""


PaymentMethod = Annotated[CreditCard | GiftCard | Certificate, Field(discriminator="source")]


class Passenger(_Part):
    first_name: str = Field(description="The passenger's first name, e.g. 'Hana'.")
    last_name: str = Field(description="The passenger's last name, e.g. 'Sato'.")
    dob: str = Field(description="Date of birth, 'YYYY-MM-DD'.")


class User(Record):
    table: ClassVar[str] = "users"
    key_field: ClassVar[str] = "user_id"

    user_id: str
    name: Name
    email: str
    dob: str
    membership: Membership
    payment_methods: dict[str, PaymentMethod]
    """Keyed by payment method id."""
    saved_passengers: list[Passenger]
    reservations: list[str]


class ReservationFlight(_Part):
    flight_number: str
    date: str
    origin: str
    destination: str
    price: int
    """Per passenger, as paid."""


class Payment(_Part):
    payment_id: str
    amount: float
    """Positive for a charge, negative for a refund."""


class Reservation(Record):
    table: ClassVar[str] = "reservations"
    key_field: ClassVar[str] = "reservation_id"

    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: FlightType
    cabin: Cabin
    flights: list[ReservationFlight]
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: datetime
    total_baggages: int
    nonfree_baggages: int
    insurance: bool
    status: Literal["active", "cancelled"] = "active"
    compensated: bool = False
    """A compensation certificate was already issued for this reservation."""


# -- tool argument shapes ------------------------------------------------------------------------
class FlightRef(_Part):
    flight_number: str = Field(description="The flight number, e.g. 'CB214'.")
    date: str = Field(description="The departure date, 'YYYY-MM-DD'.")


class PaymentPart(_Part):
    payment_id: str = Field(description="A payment method id of the user, e.g. 'gift_card_1234567'.")
    amount: float = Field(description="The amount charged to this method, in dollars.")
