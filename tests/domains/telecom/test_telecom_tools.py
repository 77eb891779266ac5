"""The back end enforces what the system guarantees; errors reach the agent and change nothing.
The phone's tools are idempotent and its status follows both the phone and the line."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from castbench.domain import Database, Domain
from castbench_telecom.schema import Bill, Customer, Device, Line, Plan, Ticket


def _line(db: Database, test: Callable[[Line], bool]) -> Line:
    return next(line for line in db.scan(Line) if test(line))


def _plan(db: Database, line: Line) -> Plan:
    return db.get(Plan, line.plan_id)


def _refused(telecom: Domain, db: Database, tool: str, arguments: dict[str, object], words: str) -> None:
    observation = telecom.toolkit.call(db, tool, arguments)
    assert observation.error, observation.content
    assert words in observation.content, observation.content
    assert not db.has_changes()


def test_every_parameter_is_described_in_the_schema(telecom: Domain) -> None:
    for toolkit in (telecom.toolkit, telecom.toolkit_for("user")):
        for schema in toolkit.schemas:
            function = schema["function"]
            assert function["description"]
            parameters = function["parameters"]
            for name, spec in parameters["properties"].items():
                assert spec.get("description"), f"{function['name']}.{name}"
    assert len(telecom.toolkit) == 18 and len(telecom.toolkit_for("user")) == 7


def test_enumerations_are_listed(telecom: Domain) -> None:
    properties = telecom.toolkit["apply_bill_credit"].schema["function"]["parameters"]["properties"]
    assert properties["reason"]["enum"] == ["service_outage", "billing_error"]
    properties = telecom.toolkit["suspend_line"].schema["function"]["parameters"]["properties"]
    assert properties["reason"]["enum"] == ["lost_or_stolen", "customer_request"]


def test_customers_are_identified_by_phone_and_birth_date_in_any_spelling(
    telecom: Domain, db: Database
) -> None:
    customer = next(db.scan(Customer))
    phone = customer.phone_numbers[0]
    digits = phone.replace("-", "")
    year, month, day = customer.date_of_birth.split("-")
    for spelling in (customer.date_of_birth, f"{month}/{day}/{year}"):
        observation = telecom.toolkit.call(
            db, "verify_customer_by_phone", {"phone_number": f"+1 {digits}", "date_of_birth": spelling}
        )
        assert observation.content == customer.customer_id
    wrong = telecom.toolkit.call(
        db, "verify_customer_by_phone", {"phone_number": phone, "date_of_birth": "1900-01-01"}
    )
    assert wrong.error
    by_id = telecom.toolkit.call(
        db,
        "verify_customer_by_id",
        {"customer_id": customer.customer_id, "full_name": customer.full_name.upper()},
    )
    assert by_id.content == customer.customer_id


@pytest.mark.parametrize(
    "expression", ["__import__('os')", "2 ** 2 ** 99", "abs(-1)", "x + 1", "'a' * 3", "True + 1", "[1][0]"]
)
def test_calculator_refuses_what_is_not_arithmetic(telecom: Domain, db: Database, expression: str) -> None:
    assert telecom.toolkit.call(db, "calculate", {"expression": expression}).error


def test_calculator_rounds_to_cents(telecom: Domain, db: Database) -> None:
    assert telecom.toolkit.call(db, "calculate", {"expression": "15 + 2 - 12.371"}).content == "4.63"
    assert telecom.toolkit.call(db, "calculate", {"expression": "1 / 0"}).error


def test_suspended_lines_take_no_plan_change_or_data(telecom: Domain, db: Database) -> None:
    line = _line(db, lambda line: line.status == "suspended")
    _refused(
        telecom, db, "change_plan", {"phone_number": line.phone_number, "plan_id": "max_60"}, "suspended"
    )
    _refused(telecom, db, "add_data", {"phone_number": line.phone_number, "gb": 1}, "suspended")


def test_roaming_only_on_plans_that_allow_it(telecom: Domain, db: Database) -> None:
    line = _line(db, lambda line: line.status == "active" and not _plan(db, line).roaming_allowed)
    _refused(telecom, db, "enable_roaming", {"phone_number": line.phone_number}, "does not allow roaming")
    roaming = _line(db, lambda line: line.status == "active" and line.roaming_enabled)
    cheap = next(plan for plan in db.scan(Plan) if not plan.roaming_allowed)
    _refused(
        telecom,
        db,
        "change_plan",
        {"phone_number": roaming.phone_number, "plan_id": cheap.plan_id},
        "roaming",
    )


def test_extra_data_is_capped_per_month_and_priced_by_plan(telecom: Domain, db: Database) -> None:
    line = _line(db, lambda line: line.status == "active" and line.data_refuel_gb == 0)
    _refused(telecom, db, "add_data", {"phone_number": line.phone_number, "gb": 11}, "limit is 10 GB")
    _refused(telecom, db, "add_data", {"phone_number": line.phone_number, "gb": 0}, "at least 1")
    added = json.loads(
        telecom.toolkit.call(db, "add_data", {"phone_number": line.phone_number, "gb": 4}).content
    )
    assert added["charge"] == round(4 * _plan(db, line).refuel_price_per_gb, 2)
    assert db.get(Line, line.phone_number).data_refuel_gb == 4
    assert telecom.toolkit.call(db, "add_data", {"phone_number": line.phone_number, "gb": 7}).error


def test_paying_settles_the_balance_with_the_customers_own_method(telecom: Domain, db: Database) -> None:
    bill = next(bill for bill in db.scan(Bill) if bill.status == "overdue")
    stranger = next(c for c in db.scan(Customer) if c.customer_id != bill.customer_id)
    foreign = next(iter(stranger.payment_methods))
    _refused(
        telecom, db, "pay_bill", {"bill_id": bill.bill_id, "payment_method_id": foreign}, "does not belong"
    )
    own = next(iter(db.get(Customer, bill.customer_id).payment_methods))
    paid = json.loads(
        telecom.toolkit.call(db, "pay_bill", {"bill_id": bill.bill_id, "payment_method_id": own}).content
    )
    assert paid["status"] == "paid" and paid["balance_due"] == 0
    again = telecom.toolkit.call(db, "pay_bill", {"bill_id": bill.bill_id, "payment_method_id": own})
    assert again.error and "already paid" in again.content


def test_credits_stay_within_the_balance_and_off_paid_bills(telecom: Domain, db: Database) -> None:
    paid = next(bill for bill in db.scan(Bill) if bill.status == "paid")
    _refused(
        telecom,
        db,
        "apply_bill_credit",
        {"bill_id": paid.bill_id, "amount": 5, "reason": "billing_error"},
        "paid",
    )
    open_bill = next(bill for bill in db.scan(Bill) if bill.status == "unpaid")
    arguments = {"bill_id": open_bill.bill_id, "amount": open_bill.balance() + 1, "reason": "service_outage"}
    _refused(telecom, db, "apply_bill_credit", arguments, "exceed")
    credited = telecom.toolkit.call(db, "apply_bill_credit", {**arguments, "amount": 10})
    assert json.loads(credited.content)["balance_due"] == round(open_bill.balance() - 10, 2)


def test_tickets_get_sequential_ids_and_only_for_own_lines(telecom: Domain, db: Database) -> None:
    customer = next(db.scan(Customer))
    other = next(line for line in db.scan(Line) if line.customer_id != customer.customer_id)
    arguments = {
        "customer_id": customer.customer_id,
        "phone_number": other.phone_number,
        "category": "lost_or_stolen",
        "description": "lost",
    }
    _refused(telecom, db, "open_ticket", arguments, "not on customer")
    before = len(db.keys(Ticket))
    opened = json.loads(
        telecom.toolkit.call(
            db, "open_ticket", {**arguments, "phone_number": customer.phone_numbers[0]}
        ).content
    )
    assert opened["ticket_id"] == f"TCK-{before + 1:06d}" and opened["created_at"].startswith("2026-05-15")


def test_transfer_ends_the_conversation(telecom: Domain, db: Database) -> None:
    observation = telecom.toolkit.call(db, "transfer_to_human_agents", {"summary": "port out"})
    assert observation.ends_conversation and not db.has_changes()


def test_missing_records_are_error_observations(telecom: Domain, db: Database) -> None:
    assert telecom.toolkit.call(db, "get_line_details", {"phone_number": "000-000-0000"}).error
    assert telecom.toolkit.call(db, "get_bills", {"customer_id": "CU000000"}).error


# -- the phone -------------------------------------------------------------------------------
def _status(telecom: Domain, db: Database, phone: str, tool: str = "check_status", **extra: object) -> dict:
    observation = telecom.toolkit_for("user").call(db, tool, {"phone_number": phone, **extra})
    assert not observation.error, observation.content
    return json.loads(observation.content)


def _device(db: Database, test: Callable[[Device], bool]) -> Device:
    return next(
        device
        for device in db.scan(Device)
        if test(device) and db.get(Line, device.phone_number).status == "active"
    )


def test_airplane_mode_is_no_service_until_turned_off_and_steps_are_idempotent(
    telecom: Domain, db: Database
) -> None:
    phone = _device(db, lambda d: d.airplane_mode).phone_number
    assert _status(telecom, db, phone)["signal"] == "airplane mode"
    assert _status(telecom, db, phone, "toggle_airplane_mode", on=False)["signal"] == "connected"
    once = db.materialize()
    _status(telecom, db, phone, "toggle_airplane_mode", on=False)
    _status(telecom, db, phone, "restart_device")
    assert db.materialize() == once


def test_a_wrong_apn_needs_a_reset_and_a_restart(telecom: Domain, db: Database) -> None:
    phone = _device(db, lambda d: d.apn != "internet").phone_number
    assert _status(telecom, db, phone)["mobile_data_connection"] == "not connected"
    after_reset = _status(telecom, db, phone, "reset_apn_settings")
    assert after_reset["settings"]["apn"] == "internet"
    assert after_reset["mobile_data_connection"] == "not connected" and after_reset["messages"]
    assert _status(telecom, db, phone, "restart_device")["mobile_data_connection"] == "connected"


def test_abroad_needs_roaming_on_the_line_and_on_the_phone(telecom: Domain, db: Database) -> None:
    device = _device(
        db, lambda d: d.location != "home" and _plan(db, db.get(Line, d.phone_number)).roaming_allowed
    )
    phone = device.phone_number
    assert _status(telecom, db, phone)["signal"] == "no service"
    assert not telecom.toolkit.call(db, "enable_roaming", {"phone_number": phone}).error
    status = _status(telecom, db, phone)
    assert status["signal"] == "roaming" and status["mobile_data_connection"] == "not connected"
    assert (
        _status(telecom, db, phone, "toggle_data_roaming", on=True)["mobile_data_connection"] == "connected"
    )


def test_a_suspended_line_has_no_service_on_a_healthy_phone(telecom: Domain, db: Database) -> None:
    line = _line(db, lambda line: line.suspension_reason == "customer_request")
    assert _status(telecom, db, line.phone_number)["signal"] == "no service"


def test_used_up_data_is_reported_and_fixed_by_extra_data(telecom: Domain, db: Database) -> None:
    line = _line(
        db,
        lambda line: (
            line.status == "active"
            and line.data_used_gb >= _plan(db, line).data_gb + line.data_refuel_gb
            and line.data_refuel_gb < 10
        ),
    )
    status = _status(telecom, db, line.phone_number)
    device = db.get(Device, line.phone_number)
    if device.airplane_mode or device.sim != "active":
        pytest.skip("phone has another fault")
    assert status["mobile_data_connection"] == "not connected" and "used all" in status["messages"][0]
    telecom.toolkit.call(db, "add_data", {"phone_number": line.phone_number, "gb": 1})
    assert _status(telecom, db, line.phone_number)["mobile_data_connection"] == "connected"
