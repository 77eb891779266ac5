"""Executable telecom policy: the rules a rules critic checks on what it has seen, and a labeler
checks on the true state.

Both judge a proposed agent call against the same `_Facts` interface: `_SeenFacts` knows only
what tool results in the conversation showed (the latest result per line, bill, plan and
customer, so a payment the agent made since counts), `_TrueFacts` reads the state. A fact that is
unknown yields no finding.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from castbench.domain import Database, DomainRules, ObservedCall, RuleFinding, ToolCall
from castbench_telecom.schema import Bill, Customer, Line, Plan, phone_key
from castbench_telecom.tools import MAX_REFUEL_GB

__all__ = ["MAX_CREDIT", "TelecomRules"]

MAX_CREDIT = 25.0
"""The largest credit an agent may apply to one bill."""

_WRITES_ON_LINES = {
    "suspend_line",
    "resume_line",
    "change_plan",
    "add_data",
    "enable_roaming",
    "disable_roaming",
}


class _Facts(ABC):
    """What is known about the world (what the agent saw, or the true state); `None` for what
    is not."""

    @abstractmethod
    def line(self, phone_number: str) -> dict[str, Any] | None:
        """The line with this number."""

    @abstractmethod
    def plan(self, plan_id: str) -> dict[str, Any] | None:
        """The plan with this id."""

    @abstractmethod
    def bill(self, bill_id: str) -> dict[str, Any] | None:
        """The bill with this id."""

    @abstractmethod
    def bills_of(self, customer_id: str) -> list[dict[str, Any]] | None:
        """Every bill of the customer."""

    def customer(self) -> dict[str, Any] | None:
        """The authenticated customer's profile, if known."""
        return None


class _SeenFacts(_Facts):
    def __init__(self, observed: list[ObservedCall]) -> None:
        self._lines: dict[str, dict[str, Any]] = {}
        self._plans: dict[str, dict[str, Any]] = {}
        self._bills: dict[str, dict[str, Any]] = {}
        self._customers: dict[str, dict[str, Any]] = {}
        self._listed_bills: set[str] = set()
        self._authenticated: str | None = None
        for call in observed:
            if call.error:
                continue
            self._absorb(call, call.result())

    def _absorb(self, call: ObservedCall, result: Any) -> None:
        if call.name in TelecomRules.auth_tools and isinstance(result, str) and self._authenticated is None:
            self._authenticated = result
        elif call.name == "get_customer_details" and isinstance(result, dict):
            self._customers[str(result.get("customer_id"))] = result
        elif call.name in ({"get_line_details"} | _WRITES_ON_LINES) and isinstance(result, dict):
            if "status" in result:
                self._lines[str(result.get("phone_number"))] = result
            elif "data_refuel_gb" in result and result.get("phone_number") in self._lines:
                self._lines[str(result["phone_number"])]["data_refuel_gb"] = result["data_refuel_gb"]
        elif call.name == "get_plan_details" and isinstance(result, dict):
            self._plans[str(result.get("plan_id"))] = result
        elif call.name == "list_plans" and isinstance(result, list):
            for plan in result:
                if isinstance(plan, dict):
                    self._plans[str(plan.get("plan_id"))] = plan
        elif call.name == "get_bills" and isinstance(result, list):
            self._listed_bills.add(str(call.arguments.get("customer_id")))
            for bill in result:
                if isinstance(bill, dict):
                    self._bills[str(bill.get("bill_id"))] = bill
        elif call.name in ("pay_bill", "apply_bill_credit") and isinstance(result, dict):
            self._bills[str(result.get("bill_id"))] = result

    def line(self, phone_number: str) -> dict[str, Any] | None:
        return self._lines.get(phone_key(phone_number))

    def plan(self, plan_id: str) -> dict[str, Any] | None:
        return self._plans.get(plan_id)

    def bill(self, bill_id: str) -> dict[str, Any] | None:
        return self._bills.get(bill_id)

    def bills_of(self, customer_id: str) -> list[dict[str, Any]] | None:
        if customer_id not in self._listed_bills:
            return None
        return [bill for bill in self._bills.values() if bill.get("customer_id") == customer_id]

    def customer(self) -> dict[str, Any] | None:
        return self._customers.get(self._authenticated) if self._authenticated else None


class _TrueFacts(_Facts):
    def __init__(self, db: Database) -> None:
        self._db = db

    def line(self, phone_number: str) -> dict[str, Any] | None:
        key = phone_key(phone_number)
        return self._db.get(Line, key).model_dump(mode="json") if self._db.exists(Line, key) else None

    def plan(self, plan_id: str) -> dict[str, Any] | None:
        return self._db.get(Plan, plan_id).model_dump(mode="json") if self._db.exists(Plan, plan_id) else None

    def bill(self, bill_id: str) -> dict[str, Any] | None:
        return self._db.get(Bill, bill_id).model_dump(mode="json") if self._db.exists(Bill, bill_id) else None

    def bills_of(self, customer_id: str) -> list[dict[str, Any]] | None:
        if not self._db.exists(Customer, customer_id):
            return None
        return [
            self._db.get(Bill, bill_id).model_dump(mode="json")
            for bill_id in self._db.get(Customer, customer_id).bill_ids
        ]


def _violation(message: str) -> RuleFinding:
    return RuleFinding("domain_violation", message)


def _ownership(call: ToolCall, facts: _Facts) -> list[RuleFinding]:
    customer = facts.customer()
    if customer is None:
        return []
    arguments = call.arguments
    findings = []
    phone = arguments.get("phone_number")
    if isinstance(phone, str) and phone_key(phone) not in customer.get("phone_numbers", []):
        findings.append(_violation(f"line {phone} is not on the authenticated customer's account"))
    bill_id = arguments.get("bill_id")
    if isinstance(bill_id, str) and bill_id not in customer.get("bill_ids", []):
        findings.append(_violation(f"bill {bill_id} is not the authenticated customer's"))
    customer_id = arguments.get("customer_id")
    if isinstance(customer_id, str) and customer_id != customer.get("customer_id"):
        findings.append(_violation(f"customer {customer_id} is not the authenticated customer"))
    return findings


def _line_rules(call: ToolCall, facts: _Facts) -> list[RuleFinding]:
    phone = call.arguments.get("phone_number")
    line = facts.line(phone) if isinstance(phone, str) else None
    if line is None:
        return []
    name, findings = call.name, []
    if (
        name in ("change_plan", "add_data", "enable_roaming", "suspend_line")
        and line.get("status") != "active"
    ):
        findings.append(_violation(f"line {phone} is suspended; {name} needs an active line"))
    if name == "resume_line":
        if line.get("status") != "suspended":
            findings.append(_violation(f"line {phone} is not suspended"))
        bills = facts.bills_of(str(line.get("customer_id")))
        overdue = [bill["bill_id"] for bill in bills or [] if bill.get("status") == "overdue"]
        if overdue:
            findings.append(
                _violation(f"cannot resume a line while bill(s) {', '.join(overdue)} are overdue")
            )
    if name == "enable_roaming":
        plan = facts.plan(str(line.get("plan_id")))
        if plan is not None and not plan.get("roaming_allowed"):
            findings.append(_violation(f"plan {plan.get('plan_id')} does not allow roaming"))
        if line.get("roaming_enabled"):
            findings.append(_violation(f"roaming is already enabled on line {phone}"))
    if name == "change_plan":
        target = call.arguments.get("plan_id")
        if target == line.get("plan_id"):
            findings.append(_violation(f"line {phone} is already on plan {target}"))
        plan = facts.plan(str(target))
        if plan is not None and line.get("roaming_enabled") and not plan.get("roaming_allowed"):
            findings.append(_violation(f"plan {target} does not allow roaming, which is enabled on the line"))
    if name == "add_data":
        gb = call.arguments.get("gb")
        if isinstance(gb, int) and int(line.get("data_refuel_gb", 0)) + gb > MAX_REFUEL_GB:
            findings.append(_violation(f"at most {MAX_REFUEL_GB} GB of extra data a month per line"))
    return findings


def _bill_rules(call: ToolCall, facts: _Facts) -> list[RuleFinding]:
    findings = []
    if call.name == "apply_bill_credit":
        amount = call.arguments.get("amount")
        if isinstance(amount, int | float) and amount > MAX_CREDIT:
            findings.append(_violation(f"a credit may not exceed {MAX_CREDIT:.2f} per bill"))
    if call.name not in ("pay_bill", "apply_bill_credit"):
        return findings
    bill = facts.bill(str(call.arguments.get("bill_id")))
    if bill is None:
        return findings
    if bill.get("status") == "paid":
        findings.append(_violation(f"bill {bill.get('bill_id')} is already paid"))
    if call.name == "apply_bill_credit" and bill.get("credits"):
        findings.append(_violation(f"bill {bill.get('bill_id')} already has a credit; one credit per bill"))
    return findings


def _findings(call: ToolCall, facts: _Facts) -> list[RuleFinding]:
    if call.actor != "agent":
        return []
    return [*_ownership(call, facts), *_line_rules(call, facts), *_bill_rules(call, facts)]


class TelecomRules(DomainRules):
    auth_tools = frozenset({"verify_customer_by_phone", "verify_customer_by_id"})
    public_tools = frozenset({"list_plans", "get_plan_details", "calculate", "transfer_to_human_agents"})

    def visible_findings(self, call: ToolCall, observed: list[ObservedCall]) -> list[RuleFinding]:
        return _findings(call, _SeenFacts(observed))

    def state_findings(self, call: ToolCall, db: Database) -> list[RuleFinding]:
        return _findings(call, _TrueFacts(db))
