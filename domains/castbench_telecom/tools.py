"""The carrier's back-end tools: what a support agent can look up and change.

The back end checks what the system itself guarantees (a line must be active to change its plan,
roaming only on plans that include it, at most 10 extra GB a month, a paid bill takes no payment
or credit). Rules that depend on judgement or on who is asking are the agent's job and are *not*
checked here (see policy.md and rules.py): who the customer is, resuming a line while a bill is
overdue, the size and number of bill credits.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from castbench.domain import Database, ToolError, calculate, read_tool, transfer_to_human_agents, write_tool
from castbench_telecom.schema import (
    Bill,
    BillCredit,
    BillPayment,
    CreditReason,
    Customer,
    Line,
    Plan,
    Ticket,
    TicketCategory,
    money,
    phone_key,
)

__all__ = ["MAX_REFUEL_GB", "TOOLS", "bill_view", "parse_date_of_birth"]

MAX_REFUEL_GB = 10
"""Extra data a line may add in one month."""

_DATE_FORMATS = ("%Y-%m-%d", "%m/%d/%Y", "%B %d, %Y", "%b %d, %Y", "%d %B %Y")


def parse_date_of_birth(text: str) -> str:
    """An ISO date from the spellings customers use; the text unchanged if none fits."""
    cleaned = " ".join(text.replace(",", ", ").split()).replace(" ,", ",")
    for layout in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, layout).date().isoformat()
        except ValueError:
            continue
    return text.strip()


def _line(db: Database, phone_number: str) -> Line:
    return db.get(Line, phone_key(phone_number))


def _active_line(db: Database, phone_number: str) -> Line:
    line = _line(db, phone_number)
    if line.status != "active":
        raise ToolError(
            f"line {line.phone_number} is suspended ({line.suspension_reason}); this needs an active line"
        )
    return line


def bill_view(bill: Bill) -> dict[str, Any]:
    """A bill as the agent sees it: the stored record plus what is still owed."""
    return {**bill.model_dump(mode="json"), "balance_due": bill.balance()}


def _open_bill(db: Database, bill_id: str) -> Bill:
    bill = db.get(Bill, bill_id)
    if bill.status == "paid":
        raise ToolError(f"bill {bill_id} is already paid")
    return bill


# -- identification --------------------------------------------------------------------------
@read_tool(authenticates=True)
def verify_customer_by_phone(db: Database, phone_number: str, date_of_birth: str) -> str:
    """Identify a customer by one of their phone numbers and their date of birth; returns the customer id.

    Args:
        phone_number: A phone number on the customer's account, e.g. '415-555-0134'.
        date_of_birth: The customer's date of birth, as 'YYYY-MM-DD', e.g. '1984-07-23'.
    """
    line = db.find(Line, phone_number=phone_key(phone_number))
    if line:
        customer = db.get(Customer, line[0].customer_id)
        if customer.date_of_birth == parse_date_of_birth(date_of_birth):
            return customer.customer_id
    raise ToolError("no customer matches that phone number and date of birth")


@read_tool(authenticates=True)
def verify_customer_by_id(db: Database, customer_id: str, full_name: str) -> str:
    """Identify a customer by their customer id and full name; returns the customer id.

    Args:
        customer_id: The id printed on the customer's bills, e.g. 'CU482913'.
        full_name: The account holder's first and last name, e.g. 'Maya Okafor'.
    """
    if db.exists(Customer, customer_id.strip().upper()):
        customer = db.get(Customer, customer_id.strip().upper())
        if " ".join(customer.full_name.lower().split()) == " ".join(full_name.lower().split()):
            return customer.customer_id
    raise ToolError("no customer matches that customer id and name")


# -- look-ups --------------------------------------------------------------------------------
@read_tool
def get_customer_details(db: Database, customer_id: str) -> Customer:
    """Get a customer's profile: name, contact, phone numbers on the account, payment methods, bill ids.

    Args:
        customer_id: The customer id, e.g. 'CU482913'.
    """
    return db.get(Customer, customer_id)


@read_tool
def get_line_details(db: Database, phone_number: str) -> Line:
    """Get a line: its owner, plan, status, data used and added this month, and whether roaming is enabled.

    Args:
        phone_number: The line's phone number, e.g. '415-555-0134'.
    """
    return _line(db, phone_number)


@read_tool(public=True)
def get_plan_details(db: Database, plan_id: str) -> Plan:
    """Get one plan: monthly price, data included, whether it allows roaming, price of extra data.

    Args:
        plan_id: The plan id, e.g. 'everyday_15'.
    """
    return db.get(Plan, plan_id)


@read_tool(public=True)
def list_plans(db: Database) -> list[Plan]:
    """List every plan the carrier offers, cheapest first."""
    return sorted(db.scan(Plan), key=lambda plan: (plan.monthly_price, plan.plan_id))


@read_tool(returns=Bill)
def get_bills(db: Database, customer_id: str) -> list[dict[str, Any]]:
    """Get a customer's bills, newest first: period, due date, charges, credits, payments, balance due.

    Args:
        customer_id: The customer id, e.g. 'CU482913'.
    """
    customer = db.get(Customer, customer_id)
    bills = [db.get(Bill, bill_id) for bill_id in customer.bill_ids]
    return [bill_view(bill) for bill in sorted(bills, key=lambda bill: bill.period, reverse=True)]


# -- lines -----------------------------------------------------------------------------------
@write_tool
def suspend_line(
    db: Database, phone_number: str, reason: Literal["lost_or_stolen", "customer_request"]
) -> Line:
    """Suspend an active line: no calls, texts or data until it is resumed.

    Args:
        phone_number: The line's phone number, e.g. '415-555-0134'.
        reason: 'lost_or_stolen' for a lost or stolen phone, 'customer_request' for a voluntary hold.
    """
    line = _active_line(db, phone_number)
    line.status = "suspended"
    line.suspension_reason = reason
    db.put(line)
    return line


@write_tool
def resume_line(db: Database, phone_number: str) -> Line:
    """Resume a suspended line. Policy: never while the customer has an overdue bill.

    Args:
        phone_number: The line's phone number, e.g. '415-555-0134'.
    """
    line = _line(db, phone_number)
    if line.status != "suspended":
        raise ToolError(f"line {line.phone_number} is not suspended")
    line.status = "active"
    line.suspension_reason = None
    db.put(line)
    return line


@write_tool
def change_plan(db: Database, phone_number: str, plan_id: str) -> Line:
    """Move an active line to another plan, from today; the new plan's data allowance applies at once.

    Args:
        phone_number: The line's phone number, e.g. '415-555-0134'.
        plan_id: The new plan's id, e.g. 'plus_30'.
    """
    line = _active_line(db, phone_number)
    plan = db.get(Plan, plan_id)
    if plan.plan_id == line.plan_id:
        raise ToolError(f"line {line.phone_number} is already on plan {plan_id}")
    if line.roaming_enabled and not plan.roaming_allowed:
        raise ToolError(f"plan {plan_id} does not allow roaming: disable roaming on the line first")
    line.plan_id = plan.plan_id
    db.put(line)
    return line


@write_tool(returns=Line)
def add_data(db: Database, phone_number: str, gb: int) -> dict[str, Any]:
    """Add extra data to an active line for the rest of this month, charged on the next bill.

    The price is the plan's refuel price per GB times `gb`; a line may add at most 10 GB a month.

    Args:
        phone_number: The line's phone number, e.g. '415-555-0134'.
        gb: Whole gigabytes to add, from 1 to 10.
    """
    line = _active_line(db, phone_number)
    if gb < 1:
        raise ToolError("gb must be at least 1")
    if line.data_refuel_gb + gb > MAX_REFUEL_GB:
        raise ToolError(
            f"line {line.phone_number} already added {line.data_refuel_gb} GB this month; "
            f"the limit is {MAX_REFUEL_GB} GB a month"
        )
    plan = db.get(Plan, line.plan_id)
    line.data_refuel_gb += gb
    db.put(line)
    return {
        "phone_number": line.phone_number,
        "added_gb": gb,
        "data_refuel_gb": line.data_refuel_gb,
        "charge": money(plan.refuel_price_per_gb * gb),
    }


@write_tool
def enable_roaming(db: Database, phone_number: str) -> Line:
    """Enable international roaming on an active line whose plan allows roaming.

    Args:
        phone_number: The line's phone number, e.g. '415-555-0134'.
    """
    line = _active_line(db, phone_number)
    if line.roaming_enabled:
        raise ToolError(f"roaming is already enabled on line {line.phone_number}")
    plan = db.get(Plan, line.plan_id)
    if not plan.roaming_allowed:
        raise ToolError(f"plan {plan.plan_id} does not allow roaming")
    line.roaming_enabled = True
    db.put(line)
    return line


@write_tool
def disable_roaming(db: Database, phone_number: str) -> Line:
    """Disable international roaming on a line.

    Args:
        phone_number: The line's phone number, e.g. '415-555-0134'.
    """
    line = _line(db, phone_number)
    if not line.roaming_enabled:
        raise ToolError(f"roaming is not enabled on line {line.phone_number}")
    line.roaming_enabled = False
    db.put(line)
    return line


# -- bills -----------------------------------------------------------------------------------
@write_tool(returns=Bill)
def pay_bill(db: Database, bill_id: str, payment_method_id: str) -> dict[str, Any]:
    """Pay the whole balance of an unpaid or overdue bill with one of the customer's payment methods.

    Args:
        bill_id: The bill id, e.g. 'B4821937'.
        payment_method_id: A payment method of the bill's customer, e.g. 'card_482193'.
    """
    bill = _open_bill(db, bill_id)
    customer = db.get(Customer, bill.customer_id)
    if payment_method_id not in customer.payment_methods:
        raise ToolError(
            f"payment method {payment_method_id} does not belong to customer {customer.customer_id}"
        )
    bill.payments.append(
        BillPayment(
            payment_method_id=payment_method_id, amount=bill.balance(), date=db.now.date().isoformat()
        )
    )
    bill.status = "paid"
    db.put(bill)
    return bill_view(bill)


@write_tool(returns=Bill)
def apply_bill_credit(db: Database, bill_id: str, amount: float, reason: CreditReason) -> dict[str, Any]:
    """Credit an unpaid or overdue bill, lowering its balance. Policy limits the amount and number of credits.

    Args:
        bill_id: The bill id, e.g. 'B4821937'.
        amount: The credit in dollars, e.g. 12.5; more than 0 and at most the balance due.
        reason: 'service_outage' or 'billing_error'.
    """
    bill = _open_bill(db, bill_id)
    amount = money(amount)
    if amount <= 0:
        raise ToolError("a credit must be more than 0")
    if amount > bill.balance():
        raise ToolError(f"a credit cannot exceed the balance due ({bill.balance():.2f})")
    bill.credits.append(BillCredit(amount=amount, reason=reason))
    db.put(bill)
    return bill_view(bill)


# -- tickets and hand-off --------------------------------------------------------------------
@write_tool
def open_ticket(
    db: Database, customer_id: str, phone_number: str, category: TicketCategory, description: str
) -> Ticket:
    """Open a support ticket for a follow-up by another team.

    Args:
        customer_id: The customer id, e.g. 'CU482913'.
        phone_number: The line the ticket is about, e.g. '415-555-0134'.
        category: One of 'lost_or_stolen', 'network_coverage', 'device_fault', 'billing_dispute'.
        description: A short description of the problem for the team that follows up.
    """
    customer = db.get(Customer, customer_id)
    line = _line(db, phone_number)
    if line.phone_number not in customer.phone_numbers:
        raise ToolError(f"line {line.phone_number} is not on customer {customer_id}'s account")
    ticket = Ticket(
        ticket_id=db.new_id("tickets"),
        customer_id=customer_id,
        phone_number=line.phone_number,
        category=category,
        description=description,
        status="open",
        created_at=db.now.isoformat(),
    )
    db.insert(ticket)
    return ticket


TOOLS = [
    verify_customer_by_phone,
    verify_customer_by_id,
    get_customer_details,
    get_line_details,
    get_plan_details,
    list_plans,
    get_bills,
    calculate,
    suspend_line,
    resume_line,
    change_plan,
    add_data,
    enable_roaming,
    disable_roaming,
    pay_bill,
    apply_bill_credit,
    open_ticket,
    transfer_to_human_agents,
]
