"""The seed state: plans, customers, their lines, phones, bills and tickets, from one `random.Random`.

Each phone gets at most one planted fault (airplane mode on, SIM not detected, mobile data off,
a wrong APN, travelling abroad without roaming, data allowance used up) on an otherwise healthy
active line, so a troubleshooting task has exactly one cause to find.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from random import Random
from typing import Literal

from castbench.domain import SEQUENCES_TABLE, Record, Row
from castbench_telecom.schema import (
    BankAccount,
    Bill,
    BillCharge,
    BillCredit,
    BillPayment,
    BillStatus,
    CreditCard,
    Customer,
    Device,
    Line,
    PaymentMethod,
    Plan,
    Ticket,
    gigabytes,
    money,
)
from castbench_telecom.vocabulary import (
    AREA_CODES,
    BANKS,
    BROKEN_APNS,
    CARD_BRANDS,
    COUNTRIES,
    DEVICE_MODELS,
    EMAIL_DOMAINS,
    FIRST_NAMES,
    LAST_NAMES,
    PLANS,
)

__all__ = ["Fault", "PERIODS", "World", "build_world"]

N_CUSTOMERS = 300
LINES_PER_CUSTOMER = {1: 70, 2: 22, 3: 8}
PERIODS = [("2026-02", "2026-03-20"), ("2026-03", "2026-04-20"), ("2026-04", "2026-05-20")]
"""(period, due date): with the clock at 2026-05-15 the April bill is due but not yet late."""

Fault = Literal["none", "airplane", "sim", "mobile_data", "apn", "abroad", "data_exhausted"]
FAULT_WEIGHTS: dict[Fault, int] = {
    "none": 40,
    "airplane": 9,
    "sim": 9,
    "mobile_data": 9,
    "apn": 9,
    "abroad": 14,
    "data_exhausted": 10,
}


@dataclass
class World:
    plans: dict[str, Plan]
    customers: dict[str, Customer]
    lines: dict[str, Line]
    devices: dict[str, Device]
    bills: dict[str, Bill]
    tickets: dict[str, Ticket]
    faults: dict[str, Fault]
    """The fault planted on each phone (generator knowledge, not part of the state)."""

    def state(self) -> dict[str, dict[str, Row]]:
        """table -> key -> row, as `data/state.json` stores it."""
        tables: dict[str, Mapping[str, Record]] = {
            "plans": self.plans,
            "customers": self.customers,
            "lines": self.lines,
            "devices": self.devices,
            "bills": self.bills,
            "tickets": self.tickets,
        }
        state: dict[str, dict[str, Row]] = {
            name: {key: record.model_dump(mode="json") for key, record in rows.items()}
            for name, rows in tables.items()
        }
        state[SEQUENCES_TABLE] = {
            "tickets": {"next": len(self.tickets) + 1, "prefix": "TCK-", "width": 6},
        }
        return state

    def bills_of(self, customer: Customer) -> list[Bill]:
        return [self.bills[bill_id] for bill_id in customer.bill_ids]

    def has_overdue(self, customer: Customer) -> bool:
        return any(bill.status == "overdue" for bill in self.bills_of(customer))

    def allowance(self, line: Line) -> float:
        return gigabytes(self.plans[line.plan_id].data_gb + line.data_refuel_gb)


class _Unique:
    def __init__(self, rng: Random) -> None:
        self._rng = rng
        self._seen: set[str] = set()

    def draw(self, make: object) -> str:
        while True:
            value = make()  # type: ignore[operator]
            if value not in self._seen:
                self._seen.add(value)
                return value

    def digits(self, width: int) -> str:
        return self.draw(lambda: str(self._rng.randrange(10 ** (width - 1), 10**width)))


def _cents(rng: Random, low: float, high: float) -> float:
    """An amount whose last cent is not 0 (so it prints the same as a float and as '%.2f')."""
    while True:
        amount = money(rng.uniform(low, high))
        if round(amount * 100) % 10:
            return amount


def _used(rng: Random, allowance: float, low: float, high: float) -> float:
    while True:
        used = gigabytes(rng.uniform(low, high) * allowance)
        if round(used * 100) % 10 and used < allowance:
            return used


def _payment_methods(rng: Random, ids: _Unique) -> dict[str, PaymentMethod]:
    methods: dict[str, PaymentMethod] = {}
    for kind in rng.sample(["card", "card", "bank"], rng.choice([1, 1, 2, 2, 3])):
        method_id = f"{kind}_{ids.digits(6)}"
        last_four = f"{rng.randrange(10000):04d}"
        if kind == "card":
            methods[method_id] = CreditCard(id=method_id, brand=rng.choice(CARD_BRANDS), last_four=last_four)
        else:
            methods[method_id] = BankAccount(id=method_id, bank=rng.choice(BANKS), last_four=last_four)
    return methods


def _bills(
    rng: Random, ids: _Unique, customer: Customer, lines: list[Line], plans: dict[str, Plan]
) -> list[Bill]:
    march_overdue = rng.random() < 0.15
    bills = []
    for period, due in PERIODS:
        charges = [
            BillCharge(
                description=f"{plans[line.plan_id].name} plan, {line.phone_number}",
                amount=plans[line.plan_id].monthly_price,
            )
            for line in lines
        ]
        charges.append(BillCharge(description="Taxes and fees", amount=_cents(rng, 2.0, 9.0)))
        amount = money(sum(charge.amount for charge in charges))
        status: BillStatus = "paid"
        if period == "2026-03" and march_overdue:
            status = "overdue"
        elif period == "2026-04" and (march_overdue or rng.random() < 0.55):
            status = "unpaid"
        bill = Bill(
            bill_id=f"B{ids.digits(7)}",
            customer_id=customer.customer_id,
            period=period,
            due_date=due,
            amount=amount,
            charges=charges,
            status=status,
        )
        if rng.random() < 0.05:
            bill.credits.append(
                BillCredit(
                    amount=_cents(rng, 3.0, 15.0), reason=rng.choice(["service_outage", "billing_error"])
                )
            )
        if status == "paid":
            bill.payments.append(
                BillPayment(
                    payment_method_id=rng.choice(list(customer.payment_methods)),
                    amount=bill.balance(),
                    date=f"{due[:8]}{rng.randint(1, 19):02d}",
                )
            )
        bills.append(bill)
    return bills


def _phone_number(rng: Random) -> str:
    return f"{rng.choice(AREA_CODES)}-{rng.randint(200, 989)}-{rng.randrange(10000):04d}"


def _fault(rng: Random, line: Line, plan: Plan) -> Fault:
    fault: Fault = rng.choices(list(FAULT_WEIGHTS), weights=list(FAULT_WEIGHTS.values()))[0]
    if fault == "data_exhausted" and line.data_refuel_gb >= 8:
        return "none"
    return fault


def _device(rng: Random, line: Line, fault: Fault) -> Device:
    device = Device(phone_number=line.phone_number, model=line.device_model, data_roaming=rng.random() < 0.2)
    if fault == "airplane":
        device.airplane_mode = True
    elif fault == "sim":
        device.sim = "not detected"
    elif fault == "mobile_data":
        device.mobile_data = False
    elif fault == "apn":
        device.apn = rng.choice(BROKEN_APNS)
    elif fault == "abroad":
        device.location = rng.choice(COUNTRIES)
        device.data_roaming = False
    return device


def build_world(rng: Random) -> World:
    ids = _Unique(rng)
    plans = {spec.plan_id: Plan(**spec._asdict()) for spec in PLANS}
    customers: dict[str, Customer] = {}
    lines: dict[str, Line] = {}
    devices: dict[str, Device] = {}
    bills: dict[str, Bill] = {}
    tickets: dict[str, Ticket] = {}
    faults: dict[str, Fault] = {}
    names = _Unique(rng)
    for _ in range(N_CUSTOMERS):
        full_name = names.draw(lambda: f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}")
        first, last = full_name.lower().split()
        customer = Customer(
            customer_id=f"CU{ids.digits(6)}",
            full_name=full_name,
            date_of_birth=f"{rng.randint(1950, 2004)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            email=f"{first}.{last}{rng.randint(10, 99)}@{rng.choice(EMAIL_DOMAINS)}",
            phone_numbers=[],
            payment_methods=_payment_methods(rng, ids),
            bill_ids=[],
        )
        count = rng.choices(list(LINES_PER_CUSTOMER), weights=list(LINES_PER_CUSTOMER.values()))[0]
        owned: list[Line] = []
        for _ in range(count):
            plan = rng.choice(list(plans.values()))
            line = Line(
                phone_number=ids.draw(lambda: _phone_number(rng)),
                customer_id=customer.customer_id,
                plan_id=plan.plan_id,
                status="active",
                data_used_gb=0.0,
                data_refuel_gb=rng.choice([0] * 9 + [1, 2, 3, 5]),
                roaming_enabled=plan.roaming_allowed and rng.random() < 0.25,
                device_model=rng.choice(DEVICE_MODELS),
            )
            owned.append(line)
        customer.phone_numbers = [line.phone_number for line in owned]
        for bill in _bills(rng, ids, customer, owned, plans):
            bills[bill.bill_id] = bill
            customer.bill_ids.append(bill.bill_id)
        overdue = any(bills[bill_id].status == "overdue" for bill_id in customer.bill_ids)
        suspend_all = overdue and rng.random() < 0.7
        for line in owned:
            plan = plans[line.plan_id]
            allowance = gigabytes(plan.data_gb + line.data_refuel_gb)
            line.data_used_gb = _used(rng, allowance, 0.05, 0.9)
            fault: Fault = "none"
            if suspend_all:
                line.status, line.suspension_reason = "suspended", "nonpayment"
            elif not overdue and (draw := rng.random()) < 0.1:
                line.status = "suspended"
                line.suspension_reason = "customer_request" if draw < 0.06 else "lost_or_stolen"
            elif not overdue:
                fault = _fault(rng, line, plan)
            if line.status == "suspended" and line.suspension_reason == "lost_or_stolen":
                ticket_id = f"TCK-{len(tickets) + 1:06d}"
                tickets[ticket_id] = Ticket(
                    ticket_id=ticket_id,
                    customer_id=customer.customer_id,
                    phone_number=line.phone_number,
                    category="lost_or_stolen",
                    description="Customer reported the phone lost; line suspended.",
                    status="open",
                    created_at=f"2026-0{rng.randint(3, 4)}-{rng.randint(1, 28):02d}"
                    f"T{rng.randint(8, 19):02d}:00:00+00:00",
                )
            if fault == "abroad":
                line.roaming_enabled = False
            if fault == "data_exhausted":
                line.data_used_gb = allowance
            faults[line.phone_number] = fault
            lines[line.phone_number] = line
            devices[line.phone_number] = _device(rng, line, fault)
        customers[customer.customer_id] = customer
    return World(plans, customers, lines, devices, bills, tickets, faults)
