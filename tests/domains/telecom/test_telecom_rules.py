"""Policy rules: what the rules critic sees in the conversation, and what the labeler sees in the state."""

from __future__ import annotations

import json
from typing import Any

from castbench.domain import Database, Domain, ObservedCall, ToolCall
from castbench_telecom.schema import Bill, Customer, Line, Plan
from castbench_telecom.tools import bill_view


def _seen(name: str, arguments: dict[str, Any], result: Any, error: bool = False) -> ObservedCall:
    content = result if isinstance(result, str) else json.dumps(result)
    return ObservedCall(name=name, arguments=arguments, content=content, error=error)


def _messages(findings: list) -> str:
    assert all(finding.failure_type == "domain_violation" for finding in findings)
    return " | ".join(finding.message for finding in findings)


def _overdue_case(db: Database) -> tuple[Customer, Line, list[Bill]]:
    line = next(line for line in db.scan(Line) if line.suspension_reason == "nonpayment")
    customer = db.get(Customer, line.customer_id)
    return customer, line, [db.get(Bill, bill_id) for bill_id in customer.bill_ids]


def test_auth_and_public_tools(telecom: Domain) -> None:
    rules = telecom.rules
    assert rules.auth_tools == {"verify_customer_by_phone", "verify_customer_by_id"}
    assert {"list_plans", "calculate", "transfer_to_human_agents"} <= rules.public_tools
    assert rules.auth_tools <= set(telecom.toolkit.names) and rules.public_tools <= set(telecom.toolkit.names)


def test_resume_with_an_overdue_bill_is_flagged_until_it_is_paid(telecom: Domain, db: Database) -> None:
    customer, line, bills = _overdue_case(db)
    resume = ToolCall(name="resume_line", arguments={"phone_number": line.phone_number})
    observed = [
        _seen("get_line_details", {"phone_number": line.phone_number}, line.model_dump(mode="json")),
        _seen("get_bills", {"customer_id": customer.customer_id}, [bill_view(b) for b in bills]),
    ]
    assert "overdue" in _messages(telecom.rules.visible_findings(resume, observed))
    assert "overdue" in _messages(telecom.rules.state_findings(resume, db))
    # Nothing seen yet about bills: the critic cannot know.
    assert telecom.rules.visible_findings(resume, observed[:1]) == []
    method = next(iter(customer.payment_methods))
    for bill in bills:
        if bill.status == "overdue":
            result = telecom.toolkit.call(
                db, "pay_bill", {"bill_id": bill.bill_id, "payment_method_id": method}
            )
            observed.append(_seen("pay_bill", {"bill_id": bill.bill_id}, result.content))
    assert telecom.rules.visible_findings(resume, observed) == []
    assert telecom.rules.state_findings(resume, db) == []


def test_roaming_on_a_plan_without_it_is_flagged(telecom: Domain, db: Database) -> None:
    line = next(line for line in db.scan(Line) if not db.get(Plan, line.plan_id).roaming_allowed)
    plan = db.get(Plan, line.plan_id)
    call = ToolCall(name="enable_roaming", arguments={"phone_number": line.phone_number})
    observed = [
        _seen("get_line_details", {"phone_number": line.phone_number}, line.model_dump(mode="json")),
        _seen("get_plan_details", {"plan_id": plan.plan_id}, plan.model_dump(mode="json")),
    ]
    assert "does not allow roaming" in _messages(telecom.rules.visible_findings(call, observed))
    assert "does not allow roaming" in _messages(telecom.rules.state_findings(call, db))


def test_credit_limit_and_one_credit_per_bill(telecom: Domain, db: Database) -> None:
    bill = next(bill for bill in db.scan(Bill) if bill.status == "unpaid" and not bill.credits)
    big = ToolCall(
        name="apply_bill_credit", arguments={"bill_id": bill.bill_id, "amount": 40, "reason": "billing_error"}
    )
    assert "25.00" in _messages(telecom.rules.visible_findings(big, []))
    assert "25.00" in _messages(telecom.rules.state_findings(big, db))
    small = ToolCall(
        name="apply_bill_credit", arguments={"bill_id": bill.bill_id, "amount": 10, "reason": "billing_error"}
    )
    assert telecom.rules.state_findings(small, db) == []
    result = telecom.toolkit.call(db, "apply_bill_credit", small.arguments)
    observed = [_seen("apply_bill_credit", small.arguments, result.content)]
    assert "one credit per bill" in _messages(telecom.rules.visible_findings(small, observed))
    assert "one credit per bill" in _messages(telecom.rules.state_findings(small, db))


def test_refuel_cap_counts_what_was_already_added(telecom: Domain, db: Database) -> None:
    line = next(line for line in db.scan(Line) if line.status == "active" and line.data_refuel_gb >= 3)
    call = ToolCall(name="add_data", arguments={"phone_number": line.phone_number, "gb": 8})
    observed = [_seen("get_line_details", {"phone_number": line.phone_number}, line.model_dump(mode="json"))]
    assert "10 GB" in _messages(telecom.rules.visible_findings(call, observed))
    assert "10 GB" in _messages(telecom.rules.state_findings(call, db))


def test_acting_on_another_customers_line_is_flagged_from_what_was_seen(
    telecom: Domain, db: Database
) -> None:
    customer = next(db.scan(Customer))
    other = next(line for line in db.scan(Line) if line.customer_id != customer.customer_id)
    observed = [
        _seen("verify_customer_by_id", {"customer_id": customer.customer_id}, customer.customer_id),
        _seen(
            "get_customer_details", {"customer_id": customer.customer_id}, customer.model_dump(mode="json")
        ),
    ]
    call = ToolCall(name="add_data", arguments={"phone_number": other.phone_number, "gb": 1})
    assert "not on the authenticated customer's account" in _messages(
        telecom.rules.visible_findings(call, observed)
    )
    own = ToolCall(name="add_data", arguments={"phone_number": customer.phone_numbers[0], "gb": 1})
    assert not any("authenticated" in f.message for f in telecom.rules.visible_findings(own, observed))


def test_a_failed_call_teaches_the_critic_nothing(telecom: Domain, db: Database) -> None:
    customer, line, bills = _overdue_case(db)
    resume = ToolCall(name="resume_line", arguments={"phone_number": line.phone_number})
    observed = [
        _seen("get_line_details", {"phone_number": line.phone_number}, line.model_dump(mode="json")),
        _seen("get_bills", {"customer_id": customer.customer_id}, "Error: boom", error=True),
    ]
    assert telecom.rules.visible_findings(resume, observed) == []


def test_user_side_calls_are_not_judged(telecom: Domain, db: Database) -> None:
    line = next(line for line in db.scan(Line))
    call = ToolCall(
        name="toggle_data_roaming", arguments={"phone_number": line.phone_number, "on": True}, actor="user"
    )
    assert telecom.rules.state_findings(call, db) == []


def test_ground_truth_writes_break_no_rule(telecom: Domain) -> None:
    """The reference solver follows the policy: no ground-truth write is flagged on the state it meets."""
    for task in telecom.tasks():
        db = telecom.fresh_database()
        for call in task.actions:
            if call.actor == "agent" and telecom.toolkit.is_write(call.name):
                assert telecom.rules.state_findings(call, db) == [], (task.id, call.name)
            telecom.toolkit_for(call.actor).call(db, call.name, call.arguments)


def test_the_critic_does_not_flag_ground_truth_writes(telecom: Domain) -> None:
    """A rules critic that sees the ground-truth conversation lets every correct write through."""
    for task in telecom.tasks():
        db = telecom.fresh_database()
        observed: list[ObservedCall] = []
        for call in task.actions:
            if call.actor == "agent" and telecom.toolkit.is_write(call.name):
                assert telecom.rules.visible_findings(call, observed) == [], (task.id, call.name)
            result = telecom.toolkit_for(call.actor).call(db, call.name, call.arguments)
            if call.actor == "agent":
                observed.append(_seen(call.name, call.arguments, result.content, result.error))
