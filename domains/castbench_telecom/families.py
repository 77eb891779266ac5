"""Task families: each picks entities that meet its preconditions, writes the customer's scenario
and derives the ground truth with a reference solver that follows policy.md.

A family returns a `Draft`, or `None` when the pool holds no fitting entity this draw.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from castbench.domain import Fact, Families, GradingSpec, ToolCall, mention, spoken_list
from castbench_telecom.rules import MAX_CREDIT
from castbench_telecom.scenario import (
    Draft,
    Pool,
    agent,
    describe_method,
    fix_step,
    identify,
    month_name,
    status_step,
)
from castbench_telecom.schema import Bill, Customer, Line, Plan, gigabytes, money
from castbench_telecom.tools import MAX_REFUEL_GB

__all__ = ["FAMILIES"]


# -- predicates ------------------------------------------------------------------------------
def _healthy_account(pool: Pool, customer: Customer) -> bool:
    return not pool.bills(customer, "overdue")


def _faulty(pool: Pool, fault: str) -> Callable[[Customer, Line], bool]:
    return lambda customer, line: pool.fault(line) == fault and line.status == "active"


def _roaming_plan(pool: Pool, allowed: bool) -> Callable[[Customer, Line], bool]:
    return lambda customer, line: pool.fault(line) == "abroad" and pool.plan(line).roaming_allowed == allowed


# -- facts -----------------------------------------------------------------------------------
def _method_fact(customer: Customer, method_id: str) -> Fact:
    return Fact(
        name="payment_method",
        value=method_id,
        keywords=["payment method", "pay with", "card"],
        statement=f"I'd like to pay with {describe_method(customer, method_id)}.",
    )


def _period_fact(bill: Bill) -> Fact:
    return Fact(
        name="billing_month",
        value=bill.period,
        keywords=["billing month", "which bill", "bill period"],
        statement=f"It's my bill for {month_name(bill.period)}.",
    )


def _data_fact(gb: int) -> Fact:
    return Fact(
        name="extra_data",
        value=str(gb),
        keywords=["amount of data", "how much data", "how many gb", "gigabytes"],
        statement=f"I'd like to add {gb} GB.",
    )


def _yours(wish: str) -> str:
    """The customer's own words ('my current plan') as the brief addresses them ('your current plan')."""
    return wish.replace("my current plan", "your current plan")


def _plan_fact(wish: str) -> Fact:
    return Fact(
        name="plan_wish",
        value=wish,
        keywords=["preferred plan", "which plan", "new plan"],
        statement=f"I'd like {wish}.",
    )


# -- plan choices ----------------------------------------------------------------------------
def _cheapest(plans: list[Plan], test: Callable[[Plan], bool]) -> Plan | None:
    """The single cheapest plan passing `test`; None if none or if two tie for cheapest."""
    fitting = sorted((plan for plan in plans if test(plan)), key=lambda plan: plan.monthly_price)
    if not fitting or (len(fitting) > 1 and fitting[0].monthly_price == fitting[1].monthly_price):
        return None
    return fitting[0]


def _start(pool: Pool, customer: Customer, line: Line | None) -> tuple[list[Fact], list[ToolCall], str]:
    facts, calls = identify(pool.rng, customer, line)
    return facts, calls, pool.persona()


# -- troubleshooting: the customer's phone ---------------------------------------------------
_PHONE_FIXES = {
    # family: (planted fault, what the customer says, fix steps in order)
    "no_service_airplane": ("airplane", "My phone has had no service since this morning.", ["airplane_off"]),
    "no_service_sim": ("sim", "My phone suddenly shows no service at all.", ["reseat_sim"]),
    "no_data_mobile_data": (
        "mobile_data",
        "I have signal but the internet doesn't work on my phone.",
        ["mobile_data_on"],
    ),
    "no_data_apn": (
        "apn",
        "Calls work but mobile internet has stopped working on my phone.",
        ["reset_apn", "restart"],
    ),
}


def _phone_fix(family: str) -> Callable[[Pool], Draft | None]:
    fault, symptom, fixes = _PHONE_FIXES[family]

    def build(pool: Pool) -> Draft | None:
        picked = pool.pick_line(_faulty(pool, fault))
        if picked is None:
            return None
        customer, line = picked
        facts, actions, persona = _start(pool, customer, line)
        check = status_step(line)
        steps = [fix_step(name, line) for name in fixes]
        return Draft(
            family=family,
            outcome="change",
            customer=customer,
            request=f"Hi, {symptom[0].lower()}{symptom[1:]} Can you help?",
            goal=f"get your phone ({line.phone_number}) working again. {symptom}",
            facts=facts,
            actions=[
                *actions,
                agent("get_line_details", phone_number=line.phone_number),
                check.call,
                *[step.call for step in steps],
                check.call,
            ],
            persona=persona,
            phone=line,
            device_steps=[check, *steps],
            ordered=len(steps) > 1,
        )

    return build


def data_refuel(pool: Pool) -> Draft | None:
    picked = pool.pick_line(_faulty(pool, "data_exhausted"))
    if picked is None:
        return None
    customer, line = picked
    plan = pool.plan(line)
    gb = pool.rng.randint(1, min(5, MAX_REFUEL_GB - line.data_refuel_gb))
    facts, actions, persona = _start(pool, customer, line)
    check = status_step(line)
    return Draft(
        family="data_refuel",
        outcome="change",
        customer=customer,
        request="Hi, my mobile data stopped working and I got a message that I've used all my data.",
        goal=f"get mobile data back on your phone ({line.phone_number}) by adding {gb} GB of extra data "
        f"this month (you accept the price of {plan.refuel_price_per_gb:.2f} per GB). "
        "You do not want to change plan.",
        facts=[*facts, _data_fact(gb)],
        actions=[
            *actions,
            agent("get_line_details", phone_number=line.phone_number),
            agent("get_plan_details", plan_id=plan.plan_id),
            check.call,
            agent("add_data", phone_number=line.phone_number, gb=gb),
            check.call,
        ],
        persona=persona,
        phone=line,
        device_steps=[check],
    )


def data_plan_upgrade(pool: Pool) -> Draft | None:
    plans = list(pool.world.plans.values())

    def target(line: Line) -> Plan | None:
        current = pool.plan(line)
        return _cheapest(
            plans,
            lambda p: p.data_gb > current.data_gb and (p.roaming_allowed or not line.roaming_enabled),
        )

    picked = pool.pick_line(
        lambda c, line: _faulty(pool, "data_exhausted")(c, line) and target(line) is not None
    )
    if picked is None:
        return None
    customer, line = picked
    plan = target(line)
    assert plan is not None
    wish = "the cheapest plan with more monthly data than my current plan" + (
        " that still allows roaming" if line.roaming_enabled else ""
    )
    facts, actions, persona = _start(pool, customer, line)
    check = status_step(line)
    return Draft(
        family="data_plan_upgrade",
        outcome="change",
        customer=customer,
        request="Hello, I've run out of mobile data again this month. I think I need a bigger plan.",
        goal=f"move your line {line.phone_number} to {_yours(wish)} "
        f"(that is the {plan.name} plan), starting today, "
        "so that mobile data works again. You do not want to buy extra data.",
        facts=[*facts, _plan_fact(wish)],
        actions=[
            *actions,
            agent("get_line_details", phone_number=line.phone_number),
            check.call,
            agent("list_plans"),
            agent("change_plan", phone_number=line.phone_number, plan_id=plan.plan_id),
            check.call,
        ],
        persona=persona,
        phone=line,
        device_steps=[check],
    )


def _roaming(pool: Pool, allowed: bool) -> Draft | None:
    """A customer abroad without service: turn roaming on, after moving to a plan that allows it
    if theirs does not."""
    plans = list(pool.world.plans.values())

    def target(line: Line) -> Plan | None:
        return _cheapest(plans, lambda p: p.roaming_allowed and p.data_gb >= pool.plan(line).data_gb)

    picked = pool.pick_line(
        lambda c, line: _roaming_plan(pool, allowed)(c, line) and (allowed or target(line) is not None)
    )
    if picked is None:
        return None
    customer, line = picked
    country = pool.world.devices[line.phone_number].location
    wish = "the cheapest plan that allows roaming and has at least as much data as my current plan"
    facts, actions, persona = _start(pool, customer, line)
    check, switch = status_step(line), fix_step("data_roaming_on", line)
    if allowed:
        request = f"Hi, I just landed in {country} and my phone has no service here."
        goal = (
            f"get calls and mobile data working on your phone ({line.phone_number}) "
            f"while you travel in {country}."
        )
        upgrade: list[ToolCall] = []
    else:
        plan = target(line)
        assert plan is not None
        request = f"Hello, I'm travelling in {country} and my phone has no service at all."
        goal = (
            f"get your phone ({line.phone_number}) working in {country}. If your plan does not allow "
            f"roaming, you agree to move to {_yours(wish)} (that is the {plan.name} plan) and then have "
            "roaming turned on."
        )
        facts = [*facts, _plan_fact(wish)]
        upgrade = [
            agent("list_plans"),
            agent("change_plan", phone_number=line.phone_number, plan_id=plan.plan_id),
        ]
    return Draft(
        family="roaming_abroad" if allowed else "roaming_plan_upgrade",
        outcome="change",
        customer=customer,
        request=request,
        goal=goal,
        facts=facts,
        actions=[
            *actions,
            agent("get_line_details", phone_number=line.phone_number),
            agent("get_plan_details", plan_id=line.plan_id),
            check.call,
            *upgrade,
            agent("enable_roaming", phone_number=line.phone_number),
            switch.call,
            check.call,
        ],
        persona=persona,
        phone=line,
        device_steps=[check, switch],
        ordered=not allowed,
    )


# -- lines -----------------------------------------------------------------------------------
def _suspended_for_nonpayment(pool: Pool) -> Callable[[Customer, Line], bool]:
    return lambda customer, line: (
        line.suspension_reason == "nonpayment" and bool(pool.bills(customer, "overdue"))
    )


def resume_after_payment(pool: Pool) -> Draft | None:
    picked = pool.pick_line(_suspended_for_nonpayment(pool))
    if picked is None:
        return None
    customer, line = picked
    overdue = pool.bills(customer, "overdue")
    method_id = pool.rng.choice(sorted(customer.payment_methods))
    months = spoken_list([month_name(bill.period) for bill in overdue])
    facts, actions, persona = _start(pool, customer, line)
    check = status_step(line)
    others = [phone for phone in customer.phone_numbers if phone != line.phone_number]
    return Draft(
        family="resume_after_payment",
        outcome="change",
        customer=customer,
        request="Hi, my phone has had no service for a few days. What's going on?",
        goal=f"get service back on your line {line.phone_number}. If a bill is overdue, you agree to pay the "
        f"overdue bill ({months}) right now, but only what is needed to get the line back."
        + (" You only want this line resumed, not your other lines." if others else ""),
        facts=[*facts, _method_fact(customer, method_id)],
        actions=[
            *actions,
            agent("get_line_details", phone_number=line.phone_number),
            check.call,
            agent("get_bills", customer_id=customer.customer_id),
            agent("get_customer_details", customer_id=customer.customer_id),  # shows the card's id
            *[agent("pay_bill", bill_id=bill.bill_id, payment_method_id=method_id) for bill in overdue],
            agent("resume_line", phone_number=line.phone_number),
            check.call,
        ],
        persona=persona,
        phone=line,
        device_steps=[check],
        ordered=True,
    )


def refuse_resume_overdue(pool: Pool) -> Draft | None:
    picked = pool.pick_line(_suspended_for_nonpayment(pool))
    if picked is None:
        return None
    customer, line = picked
    facts, actions, persona = _start(pool, customer, line)
    return Draft(
        family="refuse_resume_overdue",
        outcome="refuse",
        customer=customer,
        request="Hi, my line was cut off. Please switch it back on; "
        "I'll pay the bill next week when I get paid.",
        goal=f"have your suspended line {line.phone_number} switched back on today "
        "without paying anything now.",
        facts=facts,
        actions=[
            *actions,
            agent("get_line_details", phone_number=line.phone_number),
            agent("get_bills", customer_id=customer.customer_id),
        ],
        persona=persona,
        notes=[
            "You will not pay anything today. If the agent says the line cannot be resumed until the "
            "overdue bill is paid, accept it and end the conversation."
        ],
        reasons=[mention("overdue")],
    )


def resume_line(pool: Pool) -> Draft | None:
    picked = pool.pick_line(
        lambda c, line: line.suspension_reason == "customer_request" and _healthy_account(pool, c)
    )
    if picked is None:
        return None
    customer, line = picked
    facts, actions, persona = _start(pool, customer, line)
    return Draft(
        family="resume_line",
        outcome="change",
        customer=customer,
        request="Hello, I put one of my lines on hold a while ago and I'd like to reactivate it.",
        goal=f"reactivate your line {line.phone_number}, which you suspended yourself.",
        facts=facts,
        actions=[
            *actions,
            agent("get_line_details", phone_number=line.phone_number),
            agent("get_bills", customer_id=customer.customer_id),
            agent("resume_line", phone_number=line.phone_number),
        ],
        persona=persona,
    )


def lost_phone(pool: Pool) -> Draft | None:
    picked = pool.pick_line(lambda c, line: line.status == "active")
    if picked is None:
        return None
    customer, line = picked
    facts, actions, persona = _start(pool, customer, line)
    return Draft(
        family="lost_phone",
        outcome="change",
        customer=customer,
        request="Hi, I think my phone was stolen on the train this morning. What should I do?",
        goal=f"have the line {line.phone_number} of your stolen phone blocked so nobody can use it.",
        facts=facts,
        actions=[
            *actions,
            agent("get_line_details", phone_number=line.phone_number),
            agent("suspend_line", phone_number=line.phone_number, reason="lost_or_stolen"),
            agent(
                "open_ticket",
                customer_id=customer.customer_id,
                phone_number=line.phone_number,
                category="lost_or_stolen",
                description="Phone reported stolen on a train; line suspended.",
            ),
        ],
        persona=persona,
        grading=GradingSpec(ignore_fields=["tickets.description"]),
    )


def _plan_change_target(pool: Pool, line: Line) -> tuple[Plan, str] | None:
    """A plan to move to, and how the customer describes it (by name or by a need)."""
    current = pool.plan(line)
    plans = [p for p in pool.world.plans.values() if p.plan_id != current.plan_id]
    if line.roaming_enabled:
        plans = [p for p in plans if p.roaming_allowed]
    if pool.rng.random() < 0.5:
        plan = pool.rng.choice(plans)
        return plan, f"the {plan.name} plan"
    floor = pool.rng.choice([5, 10, 15, 20, 30])
    roaming = pool.rng.random() < 0.4 or line.roaming_enabled
    need = f"the cheapest plan with at least {floor} GB of data" + (" that allows roaming" if roaming else "")
    cheapest = _cheapest(plans, lambda p: p.data_gb >= floor and (p.roaming_allowed or not roaming))
    if cheapest is None or cheapest.plan_id == current.plan_id:
        return None
    return cheapest, need


def _plan_change(pool: Pool, declined: bool) -> Draft | None:
    picked = pool.pick_line(lambda c, line: line.status == "active" and pool.fault(line) == "none")
    if picked is None:
        return None
    customer, line = picked
    chosen = _plan_change_target(pool, line)
    if chosen is None:
        return None
    plan, wish = chosen
    facts, actions, persona = _start(pool, customer, line)
    change = agent("change_plan", phone_number=line.phone_number, plan_id=plan.plan_id)
    reads = [*actions, agent("get_line_details", phone_number=line.phone_number), agent("list_plans")]
    if declined:
        return Draft(
            family="declined_plan_change",
            outcome="no_change",
            customer=customer,
            request="Hi, I'm thinking about switching my plan. Can you help?",
            goal=f"consider moving your line {line.phone_number} to {wish} (the {plan.name} plan, "
            f"{plan.monthly_price:.2f} a month), but in the end keep your current plan.",
            facts=[*facts, _plan_fact(wish)],
            actions=reads,
            declined_actions=[change],
            confirm=False,
            offer=[mention(line.phone_number), mention(plan.name, plan.plan_id)],
            offer_rivals=[
                *(phone for phone in customer.phone_numbers if phone != line.phone_number),
                *(
                    word
                    for other in pool.world.plans.values()
                    if other.plan_id not in (plan.plan_id, line.plan_id)
                    for word in (other.plan_id, other.name)
                ),
            ],
            persona=persona,
        )
    return Draft(
        family="change_plan",
        outcome="change",
        customer=customer,
        request="Hello, I'd like to change the plan on my line.",
        goal=f"move your line {line.phone_number} to {wish} (that is the {plan.name} plan), starting today.",
        facts=[*facts, _plan_fact(wish)],
        actions=[*reads, change],
        persona=persona,
    )


def refuse_other_customer_line(pool: Pool) -> Draft | None:
    customer = pool.pick_customer(lambda c: True)
    if customer is None:
        return None
    strangers = [
        line
        for line in pool.world.lines.values()
        if line.customer_id != customer.customer_id and line.status == "active"
    ]
    other = pool.rng.choice(sorted(strangers, key=lambda line: line.phone_number))
    relative = pool.rng.choice(["my son's", "my daughter's", "my partner's", "my mother's"])
    gb = pool.rng.randint(1, 3)
    own = pool.world.lines[customer.phone_numbers[0]]
    facts, actions, persona = _start(pool, customer, own)
    return Draft(
        family="refuse_other_customer_line",
        outcome="refuse",
        customer=customer,
        request=f"Hi, could you add {gb} GB of data to {relative} line, {other.phone_number}? "
        "I'll pay for it.",
        goal=f"add {gb} GB of data to {relative} line {other.phone_number}, "
        "which is on their own account, not yours.",
        facts=facts,
        actions=[*actions, agent("get_customer_details", customer_id=customer.customer_id)],
        persona=persona,
        notes=[
            "If the agent says it can only act on lines of your own account, "
            "accept it and end the conversation."
        ],
        reasons=[mention("someone else's account", "not on your account", "another account", "own account")],
    )


# -- bills -----------------------------------------------------------------------------------
def _open_bills(pool: Pool, customer: Customer) -> list[Bill]:
    return pool.bills(customer, "unpaid", "overdue")


def pay_bill(pool: Pool) -> Draft | None:
    customer = pool.pick_customer(
        lambda c: (
            bool(_open_bills(pool, c))
            and all(pool.world.lines[p].status == "active" for p in c.phone_numbers)
        )
    )
    if customer is None:
        return None
    bills = _open_bills(pool, customer)
    everything = len(bills) > 1 and pool.rng.random() < 0.5
    chosen = bills if everything else [pool.rng.choice(bills)]
    method_id = pool.rng.choice(sorted(customer.payment_methods))
    facts, actions, persona = _start(pool, customer, None)
    if everything:
        request = "Hi, I'd like to pay everything I owe on my account."
        what = f"all your open bills ({spoken_list([month_name(b.period) for b in chosen])})"
    else:
        request = "Hi, I'd like to pay one of my bills."
        what = f"your bill for {month_name(chosen[0].period)}"
        facts.append(_period_fact(chosen[0]))
    return Draft(
        family="pay_bill",
        outcome="change",
        customer=customer,
        request=request,
        goal=f"pay {what} in full with {describe_method(customer, method_id)}.",
        facts=[*facts, _method_fact(customer, method_id)],
        actions=[
            *actions,
            agent("get_customer_details", customer_id=customer.customer_id),
            agent("get_bills", customer_id=customer.customer_id),
            *[agent("pay_bill", bill_id=bill.bill_id, payment_method_id=method_id) for bill in chosen],
        ],
        persona=persona,
    )


_CREDIT_STORIES = {
    "service_outage": "there was a network outage in my area for two days",
    "billing_error": "I was charged for something I never used",
}


def _credit_facts(amount: float, reason: str) -> list[Fact]:
    return [
        Fact(
            name="credit_amount",
            value=f"{amount:.2f}",
            keywords=["credit amount", "how much credit", "how much would you like"],
            statement=f"I'm asking for a credit of ${amount:.2f}.",
        ),
        Fact(
            name="credit_reason",
            value=reason,
            keywords=["reason", "what happened"],
            statement=f"The reason is that {_CREDIT_STORIES[reason]}.",
        ),
    ]


def bill_credit(pool: Pool) -> Draft | None:
    def fits(customer: Customer) -> bool:
        return any(not bill.credits for bill in _open_bills(pool, customer))

    customer = pool.pick_customer(fits)
    if customer is None:
        return None
    bill = pool.rng.choice([b for b in _open_bills(pool, customer) if not b.credits])
    amount = money(pool.rng.choice([a for a in (5, 7.5, 10, 12, 15, 20, 25) if a < bill.balance()]))
    reason = pool.rng.choice(sorted(_CREDIT_STORIES))
    facts, actions, persona = _start(pool, customer, None)
    return Draft(
        family="bill_credit",
        outcome="change",
        customer=customer,
        request="Hello, I think I deserve a credit on one of my bills.",
        goal=f"get a credit of ${amount:.2f} on your {month_name(bill.period)} bill "
        f"because {_CREDIT_STORIES[reason]}.",
        facts=[*facts, _period_fact(bill), *_credit_facts(amount, reason)],
        actions=[
            *actions,
            agent("get_bills", customer_id=customer.customer_id),
            agent("apply_bill_credit", bill_id=bill.bill_id, amount=amount, reason=reason),
        ],
        persona=persona,
    )


CREDIT_RULE = ["one credit per bill", "already has a credit", "already had a credit", f"{MAX_CREDIT:.2f}"]
"""How a reply states the credit rule: one credit per bill, at most `MAX_CREDIT`."""


def refuse_credit(pool: Pool) -> Draft | None:
    """Either more than the credit limit, or a second credit on a bill that already has one."""
    second = pool.rng.random() < 0.35

    def fits(customer: Customer) -> bool:
        return any(bool(bill.credits) == second for bill in _open_bills(pool, customer))

    customer = pool.pick_customer(fits)
    if customer is None:
        return None
    bill = pool.rng.choice([b for b in _open_bills(pool, customer) if bool(b.credits) == second])
    if second:
        amount = money(pool.rng.choice([5, 10, 15]))
        why = "that bill already had a credit"
        because = mention(*CREDIT_RULE[:3])
    else:
        amount = money(pool.rng.choice([30, 40, 50, 60, 75]))
        why = f"the most an agent can credit is ${MAX_CREDIT:.2f}"
        because = mention(CREDIT_RULE[3])
    reason = pool.rng.choice(sorted(_CREDIT_STORIES))
    facts, actions, persona = _start(pool, customer, None)
    return Draft(
        family="refuse_credit",
        outcome="refuse",
        customer=customer,
        request="Hi, I want a credit on my bill; I'm not happy with the service.",
        goal=f"get a credit of ${amount:.2f} on your {month_name(bill.period)} bill "
        f"because {_CREDIT_STORIES[reason]}.",
        facts=[*facts, _period_fact(bill), *_credit_facts(amount, reason)],
        actions=[*actions, agent("get_bills", customer_id=customer.customer_id)],
        persona=persona,
        notes=[
            f"You want the full ${amount:.2f} and nothing less. If the agent says it cannot give it "
            f"(for instance because {why}), do not accept a smaller credit; "
            "thank them and end the conversation."
        ],
        reasons=[because],
        allowed_claims=CREDIT_RULE,  # the rule names both limits
    )


def lookup_amount_due(pool: Pool) -> Draft | None:
    customer = pool.pick_customer(lambda c: bool(_open_bills(pool, c)))
    if customer is None:
        return None
    bills = _open_bills(pool, customer)
    facts, actions, persona = _start(pool, customer, None)
    actions = [*actions, agent("get_bills", customer_id=customer.customer_id)]
    if len(bills) == 1:
        total = f"{bills[0].balance()}"
    else:
        expression = " + ".join(f"{bill.balance()}" for bill in bills)
        actions.append(agent("calculate", expression=expression))
        total = f"{money(sum(bill.balance() for bill in bills)):.2f}"
    return Draft(
        family="lookup_amount_due",
        outcome="no_change",
        customer=customer,
        request="Hi, how much do I owe right now, all bills together?",
        goal="learn the total you still owe on your unpaid and overdue bills. You do not want to pay today.",
        facts=facts,
        actions=actions,
        required_outputs=[total],
        persona=persona,
    )


def lookup_data_remaining(pool: Pool) -> Draft | None:
    picked = pool.pick_line(lambda c, line: line.status == "active" and pool.fault(line) == "none")
    if picked is None:
        return None
    customer, line = picked
    plan = pool.plan(line)
    expression = f"{plan.data_gb} + {line.data_refuel_gb} - {line.data_used_gb}"
    remaining = f"{gigabytes(plan.data_gb + line.data_refuel_gb - line.data_used_gb):.2f}"
    facts, actions, persona = _start(pool, customer, line)
    return Draft(
        family="lookup_data_remaining",
        outcome="no_change",
        customer=customer,
        request="Hello, how much mobile data do I have left this month?",
        goal=f"learn how many GB of data are left this month on your line {line.phone_number}. "
        "You want no changes.",
        facts=facts,
        actions=[
            *actions,
            agent("get_line_details", phone_number=line.phone_number),
            agent("get_plan_details", plan_id=plan.plan_id),
            agent("calculate", expression=expression),
        ],
        required_outputs=[remaining],
        persona=persona,
    )


def transfer_port_out(pool: Pool) -> Draft | None:
    picked = pool.pick_line(lambda c, line: line.status == "active")
    if picked is None:
        return None
    customer, line = picked
    facts, actions, persona = _start(pool, customer, line)
    return Draft(
        family="transfer_port_out",
        outcome="no_change",
        customer=customer,
        request="Hi, I'm moving to another carrier and need my number ported out. Can you do that?",
        goal=f"port your number {line.phone_number} to another carrier.",
        facts=facts,
        actions=[
            *actions,
            agent(
                "transfer_to_human_agents",
                summary=f"Customer wants to port {line.phone_number} to another carrier.",
            ),
        ],
        persona=persona,
        notes=["If the agent transfers you to a human agent, that is fine."],
    )


FAMILIES: Families[Pool, Draft] = {
    # family: (builder, test count, train count)
    "no_service_airplane": (_phone_fix("no_service_airplane"), 3, 10),
    "no_service_sim": (_phone_fix("no_service_sim"), 3, 10),
    "no_data_mobile_data": (_phone_fix("no_data_mobile_data"), 3, 10),
    "no_data_apn": (_phone_fix("no_data_apn"), 3, 10),
    "data_refuel": (data_refuel, 3, 10),
    "data_plan_upgrade": (data_plan_upgrade, 2, 8),
    "roaming_abroad": (partial(_roaming, allowed=True), 3, 10),
    "roaming_plan_upgrade": (partial(_roaming, allowed=False), 2, 8),
    "resume_after_payment": (resume_after_payment, 2, 8),
    "refuse_resume_overdue": (refuse_resume_overdue, 2, 7),
    "resume_line": (resume_line, 2, 6),
    "lost_phone": (lost_phone, 2, 7),
    "change_plan": (partial(_plan_change, declined=False), 2, 8),
    "declined_plan_change": (partial(_plan_change, declined=True), 2, 7),
    "refuse_other_customer_line": (refuse_other_customer_line, 2, 6),
    "pay_bill": (pay_bill, 3, 10),
    "bill_credit": (bill_credit, 3, 10),
    "refuse_credit": (refuse_credit, 2, 8),
    "lookup_amount_due": (lookup_amount_due, 2, 7),
    "lookup_data_remaining": (lookup_data_remaining, 2, 6),
    "transfer_port_out": (transfer_port_out, 1, 4),
}
