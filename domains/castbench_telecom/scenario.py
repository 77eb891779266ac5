"""What every task family shares: the draft of a task, the pool of customers a split draws from,
and the building blocks of a scenario (how the customer identifies, the facts they hold back, the
steps they perform on their phone when told to)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from random import Random

from castbench.domain import DeviceStep, DraftBase, Fact, GradingSpec, ToolCall, confirm_answer
from castbench_telecom.schema import Bill, Customer, Line, Plan
from castbench_telecom.vocabulary import PERSONAS
from castbench_telecom.world import Fault, World

__all__ = [
    "equivalents",
    "Draft",
    "Pool",
    "agent",
    "describe_method",
    "device",
    "identify",
    "month_name",
]


@dataclass(kw_only=True)
class Draft(DraftBase):
    customer: Customer
    phone: Line | None = None
    """The customer's own phone, when the task involves it."""
    device_steps: list[DeviceStep] = field(default_factory=list)
    grading: GradingSpec = field(default_factory=GradingSpec)

    def instructions(self) -> str:
        phone = ""
        if self.device_steps and self.phone is not None:
            phone = (
                f"\nYou are holding your phone, number {self.phone.phone_number}. When the agent asks you to "
                "look at its status or to change something on it, do exactly that with your phone tools "
                "(give them your phone number) and tell the agent what the phone shows. Do not change "
                "anything on the phone that the agent did not ask for."
            )
        return self.brief(
            self.customer.full_name,
            "a customer of a mobile carrier",
            unknown="any bill ids, plan ids or payment method ids",
            answer=confirm_answer(self.confirm, change="a change"),
            situation=phone,
        )

    def customer_steps(self) -> list[DeviceStep]:
        """What the customer does on their phone when told to: the steps this task needs, then
        every other fix the phone has (`FIX_STEPS`). A customer does what the agent says, needed
        or not, so an agent that reads out every fix at once changes what the task does not need
        (data roaming switched on at home) and fails, as it would with a real customer; the
        oracle instructs only the steps the ground truth holds."""
        if not self.device_steps or self.phone is None:
            return list(self.device_steps)
        needed = [step.call for step in self.device_steps]
        others = (fix_step(name, self.phone) for name in FIX_STEPS)
        return [*self.device_steps, *(step for step in others if step.call not in needed)]


class Pool:
    """The customers one split draws from, and the lines and customers it has already used."""

    def __init__(self, world: World, customers: list[Customer], rng: Random) -> None:
        self.world = world
        self.customers = customers
        self.rng = rng
        self.used: set[str] = set()

    def pick_line(self, test: Callable[[Customer, Line], bool]) -> tuple[Customer, Line] | None:
        """A customer's line passing `test`, preferring lines and customers not used yet."""
        for fresh_only in (True, False):
            candidates = [
                (customer, line)
                for customer in self.customers
                if not (fresh_only and customer.customer_id in self.used)
                for phone in customer.phone_numbers
                if test(customer, line := self.world.lines[phone])
            ]
            if candidates:
                customer, line = self.rng.choice(candidates)
                self.used.add(customer.customer_id)
                return customer, line
        return None

    def pick_customer(self, test: Callable[[Customer], bool]) -> Customer | None:
        for fresh_only in (True, False):
            candidates = [
                c for c in self.customers if test(c) and not (fresh_only and c.customer_id in self.used)
            ]
            if candidates:
                customer = self.rng.choice(candidates)
                self.used.add(customer.customer_id)
                return customer
        return None

    def fault(self, line: Line) -> Fault:
        return self.world.faults[line.phone_number]

    def plan(self, line: Line) -> Plan:
        return self.world.plans[line.plan_id]

    def bills(self, customer: Customer, *statuses: str) -> list[Bill]:
        return [bill for bill in self.world.bills_of(customer) if not statuses or bill.status in statuses]

    def persona(self) -> str:
        return self.rng.choice(PERSONAS)


# -- wording ---------------------------------------------------------------------------------
def month_name(period: str) -> str:
    return date.fromisoformat(f"{period}-01").strftime("%B %Y")


def describe_method(customer: Customer, method_id: str) -> str:
    method = customer.payment_methods[method_id]
    if method.kind == "credit_card":
        return f"my {method.brand} card ending in {method.last_four}"
    return f"my {method.bank} account ending in {method.last_four}"


# -- calls -----------------------------------------------------------------------------------
def agent(name: str, **arguments: object) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def device(name: str, phone: Line, **arguments: object) -> ToolCall:
    return ToolCall(name=name, arguments={"phone_number": phone.phone_number, **arguments}, actor="user")


# -- identification --------------------------------------------------------------------------
def phone_fact(line: Line, own: bool = True) -> Fact:
    statement = f"My phone number is {line.phone_number}." if own else f"The line is {line.phone_number}."
    return Fact(
        name="phone_number",
        value=line.phone_number,
        keywords=["phone number", "mobile number", "which line"],
        statement=statement,
    )


def _by_phone(customer: Customer, phone_number: str) -> ToolCall:
    return agent("verify_customer_by_phone", phone_number=phone_number, date_of_birth=customer.date_of_birth)


def _by_id(customer: Customer) -> ToolCall:
    return agent("verify_customer_by_id", customer_id=customer.customer_id, full_name=customer.full_name)


def equivalents(world: World, call: ToolCall) -> list[ToolCall]:
    """The same customer identified the other way: by any of their lines and their date of birth,
    or by customer id and full name."""
    for customer in world.customers.values():
        ways = [_by_id(customer), *(_by_phone(customer, number) for number in customer.phone_numbers)]
        if call in ways:
            return ways
    return []


def identify(rng: Random, customer: Customer, line: Line | None) -> tuple[list[Fact], list[ToolCall]]:
    """Half of the customers identify by phone number and date of birth, half by customer id and
    full name; the facts include the number of the line the task is about, if any."""
    by_phone = line is not None and rng.random() < 0.5
    if by_phone:
        assert line is not None
        facts = [
            phone_fact(line),
            Fact(
                name="date_of_birth",
                value=customer.date_of_birth,
                keywords=["date of birth", "birth", "dob"],
                statement=f"My date of birth is {customer.date_of_birth}.",
            ),
        ]
        return facts, [_by_phone(customer, line.phone_number)]
    facts = [
        Fact(
            name="customer_id",
            value=customer.customer_id,
            keywords=["customer id", "account id", "customer number"],
            statement=f"My customer id is {customer.customer_id}.",
        ),
        Fact(
            name="full_name",
            value=customer.full_name,
            keywords=["full name", "your name"],
            statement=f"My full name is {customer.full_name}.",
        ),
    ]
    if line is not None:
        facts.append(phone_fact(line, own=True))
    return facts, [_by_id(customer)]


# -- the phone -------------------------------------------------------------------------------
def status_step(phone: Line) -> DeviceStep:
    return DeviceStep(
        instruction="Open your phone's status screen and read me everything it shows.",
        keywords=["status screen"],
        call=device("check_status", phone),
    )


FIX_STEPS: dict[str, tuple[str, list[str], str, dict[str, object]]] = {
    # step: (instruction, keywords, user tool, extra arguments)
    "airplane_off": (
        "Swipe down to your quick settings and turn airplane mode off.",
        ["airplane mode"],
        "toggle_airplane_mode",
        {"on": False},
    ),
    "reseat_sim": (
        "Switch the phone off, take the SIM card out, put it back in firmly, then switch the phone on.",
        ["sim card"],
        "reseat_sim",
        {},
    ),
    "mobile_data_on": (
        "In Settings > Network, turn mobile data on.",
        ["mobile data"],
        "toggle_mobile_data",
        {"on": True},
    ),
    "reset_apn": (
        "In Settings > Network > Access point names (APN), choose Reset to default.",
        ["apn"],
        "reset_apn_settings",
        {},
    ),
    "restart": ("Now restart your phone: switch it off and on again.", ["restart"], "restart_device", {}),
    "data_roaming_on": (
        "In Settings > Network, switch data roaming on.",
        ["data roaming"],
        "toggle_data_roaming",
        {"on": True},
    ),
}


def fix_step(name: str, phone: Line) -> DeviceStep:
    instruction, keywords, tool, extra = FIX_STEPS[name]
    return DeviceStep(instruction=instruction, keywords=keywords, call=device(tool, phone, **extra))
