"""The carrier's records: plans, customers, lines, bills, tickets, and each line's phone.

`devices` is the customer's side of the world: the phone that uses a line, with the settings
the customer (not the agent) can change. It lives in the same state so that a fix is graded
where it happens: on the phone.

Money is a float rounded to cents (`money()`), data a float rounded to 1/100 GB (`gigabytes()`).
Phone numbers are stored as 'NNN-NNN-NNNN' (`phone_key()` turns any spelling into that form).
"""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from castbench.domain import Record

__all__ = [
    "Bill",
    "BillCharge",
    "BillCredit",
    "BillPayment",
    "BillStatus",
    "CreditReason",
    "Customer",
    "Device",
    "Line",
    "LineStatus",
    "PaymentMethod",
    "Plan",
    "SuspensionReason",
    "Ticket",
    "TicketCategory",
    "gigabytes",
    "money",
    "phone_key",
]

LineStatus = Literal["active", "suspended"]
SuspensionReason = Literal["nonpayment", "lost_or_stolen", "customer_request"]
BillStatus = Literal["paid", "unpaid", "overdue"]
CreditReason = Literal["service_outage", "billing_error"]
TicketCategory = Literal["lost_or_stolen", "network_coverage", "device_fault", "billing_dispute"]


def money(amount: float) -> float:
    """An amount rounded to cents (the one rounding rule for money)."""
    return round(amount + 0.0, 2)


def gigabytes(amount: float) -> float:
    """A data volume rounded to 1/100 GB."""
    return round(amount + 0.0, 2)


def phone_key(phone_number: str) -> str:
    """'(415) 555-0134', '+1 415 555 0134', '4155550134' -> '415-555-0134'; unchanged if not 10 digits."""
    digits = re.sub(r"\D", "", phone_number)
    if len(digits) == 11 and digits.startswith("1"):
        digits = digits[1:]
    if len(digits) != 10:
        return phone_number.strip()
    return f"{digits[:3]}-{digits[3:6]}-{digits[6:]}"


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Plan(Record):
    table: ClassVar[str] = "plans"
    key_field: ClassVar[str] = "plan_id"

    plan_id: str
    name: str
    monthly_price: float
    data_gb: int
    """Data included per month."""
    roaming_allowed: bool
    refuel_price_per_gb: float
    """Price of one extra GB added during the month."""


class CreditCard(_Part):
    kind: Literal["credit_card"] = "credit_card"
    id: str
    brand: str
    last_four: str


class BankAccount(_Part):
    kind: Literal["bank_account"] = "bank_account"
    id: str
    bank: str
    last_four: str


PaymentMethod = Annotated[CreditCard | BankAccount, Field(discriminator="kind")]


class Customer(Record):
    table: ClassVar[str] = "customers"
    key_field: ClassVar[str] = "customer_id"

    customer_id: str
    full_name: str
    date_of_birth: str
    """ISO date, e.g. '1984-07-23'."""
    email: str
    phone_numbers: list[str]
    """The lines on this customer's account."""
    payment_methods: dict[str, PaymentMethod]
    """Keyed by payment method id."""
    bill_ids: list[str]


class Line(Record):
    table: ClassVar[str] = "lines"
    key_field: ClassVar[str] = "phone_number"

    phone_number: str
    customer_id: str
    plan_id: str
    status: LineStatus
    suspension_reason: SuspensionReason | None = None
    data_used_gb: float
    """Data used in the current month (May 2026)."""
    data_refuel_gb: int = 0
    """Extra GB added in the current month, on top of the plan's allowance."""
    roaming_enabled: bool = False
    device_model: str


class BillCharge(_Part):
    description: str
    amount: float


class BillCredit(_Part):
    amount: float
    reason: CreditReason


class BillPayment(_Part):
    payment_method_id: str
    amount: float
    date: str


class Bill(Record):
    table: ClassVar[str] = "bills"
    key_field: ClassVar[str] = "bill_id"

    bill_id: str
    customer_id: str
    period: str
    """The month billed, 'YYYY-MM'."""
    due_date: str
    amount: float
    """Total of the charges."""
    charges: list[BillCharge]
    credits: list[BillCredit] = Field(default_factory=list)
    payments: list[BillPayment] = Field(default_factory=list)
    status: BillStatus

    def balance(self) -> float:
        """What is still owed: charges less credits and payments."""
        return money(self.amount - sum(c.amount for c in self.credits) - sum(p.amount for p in self.payments))


class Ticket(Record):
    table: ClassVar[str] = "tickets"
    key_field: ClassVar[str] = "ticket_id"

    ticket_id: str
    customer_id: str
    phone_number: str
    category: TicketCategory
    description: str
    status: Literal["open", "closed"]
    created_at: str


class Device(Record):
    """The phone that uses a line: what the customer sees and can change on it."""

    table: ClassVar[str] = "devices"
    key_field: ClassVar[str] = "phone_number"

    phone_number: str
    model: str
    airplane_mode: bool = False
    mobile_data: bool = True
    data_roaming: bool = False
    """The phone's own data-roaming switch (separate from roaming on the line)."""
    apn: str = "internet"
    """Access point name; the carrier's correct one is 'internet'."""
    sim: Literal["active", "not detected"] = "active"
    location: str = "home"
    """'home', or the country the customer is travelling in."""
    restart_pending: bool = False
    """Network settings changed since the last restart: they take effect after one."""
