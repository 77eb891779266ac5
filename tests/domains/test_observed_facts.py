"""The shared observed-versus-true facts: what a rule learns from a tool result comes from the
tool's metadata, so a renamed tool keeps its rules checked."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from castbench._domain.database import Database
from castbench._domain.facts import ObservedFacts, TrueFacts
from castbench.domain import ObservedCall, ToolCall, Toolkit, load_domain, read_tool, write_tool
from castbench_airline.rules import AirlineRules
from castbench_airline.schema import Flight, Reservation
from castbench_retail.rules import RetailRules
from castbench_retail.schema import Order
from castbench_telecom.rules import TelecomRules
from castbench_telecom.schema import Bill, Customer, Line
from castbench_telehealth.rules import TelehealthRules
from castbench_telehealth.schema import Appointment, Patient, Prescription, Provider


def _seen(name: str, arguments: dict[str, Any], result: Any, error: bool = False) -> ObservedCall:
    content = result if isinstance(result, str) else json.dumps(result)
    return ObservedCall(name=name, arguments=arguments, content=content, error=error)


def _renamed(toolkit: Toolkit, renames: dict[str, str]) -> Toolkit:
    return Toolkit(dataclasses.replace(tool, name=renames.get(tool.name, tool.name)) for tool in toolkit)


def test_tool_metadata_comes_from_annotations_and_decorators() -> None:
    retail = load_domain("retail").toolkit
    assert retail["get_order_details"].returns is Order  # -> Order
    assert retail["cancel_pending_order"].requires == {"status": "pending"}
    assert retail["find_user_id_by_email"].authenticates and retail["find_user_id_by_email"].returns is None
    telecom = load_domain("telecom").toolkit
    assert telecom["list_plans"].returns.__name__ == "Plan"  # -> list[Plan]
    assert telecom["add_data"].returns is Line  # -> dict[str, Any], returns=Line

    def acts(db: Database, order_id: str) -> dict[str, Any]:
        """Does something.

        Args:
            order_id: An order.
        """
        return {}

    with pytest.raises(TypeError, match="requires= needs the record"):
        write_tool(requires={"status": "pending"})(acts)
    assert read_tool(public=True)(acts).public


def test_auth_and_public_tools_follow_the_metadata() -> None:
    retail = load_domain("retail")
    assert retail.rules.auth_tools == {"find_user_id_by_email", "find_user_id_by_name_zip"}
    assert retail.rules.public_tools == {
        "list_all_product_types",
        "get_product_details",
        "calculate",
        "transfer_to_human_agents",
    }
    renamed = RetailRules(_renamed(retail.toolkit, {"find_user_id_by_email": "lookup_user"}))
    assert renamed.auth_tools == {"lookup_user", "find_user_id_by_name_zip"}


def test_a_renamed_retail_toolkit_still_has_its_order_rules_checked() -> None:
    retail = load_domain("retail")
    db = retail.fresh_database()
    order = next(order for order in db.scan(Order) if order.status == "delivered")
    renames = {
        "get_order_details": "show_order",
        "cancel_pending_order": "cancel_order",
        "find_user_id_by_email": "identify",
    }
    rules = RetailRules(_renamed(retail.toolkit, renames))
    observed = [
        _seen("identify", {"email": "x"}, "someone_else_1"),
        _seen("show_order", {"order_id": order.order_id}, order.model_dump(mode="json")),
    ]
    arguments = {"order_id": order.order_id, "reason": "no longer needed"}
    cancel = ToolCall(name="cancel_order", arguments=arguments)
    messages = [finding.message for finding in rules.visible_findings(cancel, observed)]
    assert messages == [
        "cancel_order needs a pending order, but it is delivered",
        f"order belongs to {order.user_id}, not the authenticated user",
    ]
    assert [f.message for f in rules.state_findings(cancel, db)] == [messages[0]]
    # the old names mean nothing to the renamed toolkit: nothing is learned from them
    old = [_seen("get_order_details", {"order_id": order.order_id}, order.model_dump(mode="json"))]
    assert rules.visible_findings(cancel, old) == []


def test_a_renamed_telecom_toolkit_still_has_its_line_rules_checked() -> None:
    telecom = load_domain("telecom")
    db = telecom.fresh_database()
    line = next(line for line in db.scan(Line) if line.status == "suspended")
    rules = TelecomRules(_renamed(telecom.toolkit, {"get_line_details": "line_info"}))
    call = ToolCall(name="add_data", arguments={"phone_number": line.phone_number, "gb": 1})
    observed = [_seen("line_info", {"phone_number": line.phone_number}, line.model_dump(mode="json"))]
    assert any("needs an active line" in f.message for f in rules.visible_findings(call, observed))


def test_renamed_telecom_tools_keep_their_line_and_bill_rules_checked() -> None:
    telecom = load_domain("telecom")
    db = telecom.fresh_database()
    active = next(line for line in db.scan(Line) if line.status == "active")
    paid = next(bill for bill in db.scan(Bill) if bill.status == "paid")
    renames = {"resume_line": "reactivate", "apply_bill_credit": "credit", "get_bills": "bills"}
    rules = TelecomRules(_renamed(telecom.toolkit, renames))
    resume = ToolCall(name="reactivate", arguments={"phone_number": active.phone_number})
    credit_args = {"bill_id": paid.bill_id, "amount": 30.0, "reason": "service_outage"}
    credit = ToolCall(name="credit", arguments=credit_args)
    observed = [
        _seen("line_info", {}, active.model_dump(mode="json")),  # not a tool of this toolkit: unread
        _seen("get_line_details", {}, active.model_dump(mode="json")),
        _seen("bills", {"customer_id": paid.customer_id}, [paid.model_dump(mode="json")]),
    ]
    not_suspended = [f"line {active.phone_number} is not suspended"]
    too_much = ["a credit may not exceed 25.00 per bill", f"bill {paid.bill_id} is already paid"]
    assert [f.message for f in rules.visible_findings(resume, observed)] == not_suspended
    assert [f.message for f in rules.state_findings(resume, db)] == not_suspended
    assert [f.message for f in rules.visible_findings(credit, observed)] == too_much
    assert [f.message for f in rules.state_findings(credit, db)] == too_much
    # the old names are no tools of the renamed toolkit: no line or bill rule for them
    old = ToolCall(name="apply_bill_credit", arguments=credit_args)
    assert rules.state_findings(old, db) == []


def test_observed_facts_learn_whole_rows_merge_partial_ones_and_note_listings() -> None:
    telecom = load_domain("telecom")
    db = telecom.fresh_database()
    line = next(iter(db.scan(Line)))
    whole = line.model_dump(mode="json")
    partial = {"phone_number": line.phone_number, "added_gb": 2, "data_refuel_gb": 7, "charge": 10.0}
    customer = db.get(Customer, line.customer_id)
    observed = [
        _seen("add_data", {}, {**partial, "phone_number": "000-000-0000"}),  # unknown line: left out
        _seen("get_line_details", {}, whole),
        _seen("add_data", {}, partial),  # a partial view updates the known row
        _seen("get_bills", {"customer_id": customer.customer_id}, []),
        _seen("get_customer_details", {}, "Error: no such customer", error=True),
    ]
    facts = ObservedFacts(telecom.toolkit, observed)
    assert facts.row(Line, "000-000-0000") is None
    assert facts.row(Line, line.phone_number) == {**whole, **partial}
    assert facts.record(Line, line.phone_number) is None  # no longer a whole Line: extra fields
    assert facts.listed(Bill, customer_id=customer.customer_id)
    assert not facts.listed(Bill, customer_id="C-nobody")
    assert facts.rows(Customer) == []
    reads_only = ObservedFacts(telecom.toolkit, [_seen("change_plan", {}, whole)], from_writes=False)
    assert reads_only.row(Line, line.phone_number) is None
    truth = TrueFacts(db)
    assert truth.record(Line, line.phone_number) == line and truth.row(Line, "nope") is None


def test_tools_without_record_results_teach_nothing() -> None:
    toolkit = Toolkit([tool for tool in load_domain("retail").toolkit if tool.returns is None])
    facts = ObservedFacts(toolkit, [_seen("calculate", {}, {"order_id": "#W1", "status": "pending"})])
    assert facts.rows(Order) == []


def test_a_renamed_airline_toolkit_still_has_its_rules_checked() -> None:
    airline = load_domain("airline")
    db = airline.fresh_database()
    now = airline.now
    reservation = (
        next(  # booked long ago, economy, no insurance: cancelling for a change of plan breaks policy
            r
            for r in db.scan(Reservation)
            if r.status == "active"
            and r.cabin == "economy"
            and not r.insurance
            and (now - r.created_at).days > 2
        )
    )
    renames = {
        "get_reservation_details": "show_booking",
        "cancel_reservation": "cancel_booking",
        "verify_user_identity": "check_identity",
        "get_flight_status": "flight_info",
    }
    toolkit = _renamed(airline.toolkit, renames)
    rules = AirlineRules(toolkit)
    assert "check_identity" in rules.auth_tools and "flight_info" in rules.public_tools
    cancel = ToolCall(
        name="cancel_booking",
        arguments={"reservation_id": reservation.reservation_id, "reason": "change of plan"},
    )
    shown = _seen(
        "show_booking", {"reservation_id": reservation.reservation_id}, reservation.model_dump(mode="json")
    )
    expected = [f"reservation {reservation.reservation_id} cannot be cancelled"]
    assert [f.message[: len(expected[0])] for f in rules.visible_findings(cancel, [shown])] == expected
    assert [f.message[: len(expected[0])] for f in rules.state_findings(cancel, db)] == expected
    # a flight status, under its new name, is still understood: the flight has departed
    flight = reservation.flights[0]
    status = {"flight_number": flight.flight_number, "date": flight.date, "origin": flight.origin,
              "destination": flight.destination, "status": "landed"}  # fmt: skip
    departed = rules.visible_findings(cancel, [shown, _seen("flight_info", {}, status)])
    where = f"flight {flight.flight_number} on {flight.date} of reservation {reservation.reservation_id}"
    assert [f.message for f in departed] == [f"{where} has already departed"]
    # the old names mean nothing to the renamed toolkit
    old = _seen("get_reservation_details", {}, reservation.model_dump(mode="json"))
    assert rules.visible_findings(cancel, [old]) == []
    assert (
        rules.visible_findings(ToolCall(name="cancel_reservation", arguments=cancel.arguments), [shown]) == []
    )


def test_flight_views_add_up_per_date_in_what_was_seen() -> None:
    airline = load_domain("airline")
    offer = {"flight_number": "CB1", "origin": "BOS", "destination": "DEN", "date": "2026-05-20",
             "prices": {"economy": 120, "business": 400}}  # fmt: skip
    status = {
        "flight_number": "CB1",
        "origin": "BOS",
        "destination": "DEN",
        "date": "2026-05-21",
        "status": "delayed",
    }
    cheaper = {**offer, "prices": {"economy": 99}}
    observed = [
        _seen("search_direct_flight", {}, [offer]),
        _seen("get_flight_status", {}, status),
        _seen("search_onestop_flight", {}, [[cheaper]]),
    ]
    facts = ObservedFacts(airline.toolkit, observed)
    assert facts.seen(Flight, "CB1") == {
        "flight_number": "CB1",
        "origin": "BOS",
        "destination": "DEN",
        "dates": {
            "2026-05-20": {"status": "available", "prices": {"economy": 99, "business": 400}},
            "2026-05-21": {"status": "delayed", "prices": {}},
        },
    }
    assert facts.row(Flight, "CB1") is None  # never a whole flight


def test_a_renamed_telehealth_toolkit_still_has_its_rules_checked() -> None:
    telehealth = load_domain("telehealth")
    db = telehealth.fresh_database()
    controlled = next(p for p in db.scan(Prescription) if p.controlled)
    patient = db.get(Patient, controlled.patient_id)
    other = next(p for p in db.scan(Patient) if p.patient_id != patient.patient_id and p.guardian_id is None)
    renames = {
        "get_patient_details": "patient_record",
        "request_refill": "refill",
        "find_patient_by_email": "identify",
        "list_available_slots": "free_slots",
        "book_appointment": "book",
    }
    toolkit = _renamed(telehealth.toolkit, renames)
    rules = TelehealthRules(toolkit)
    assert rules.auth_tools == {"identify", "find_patient_by_name_dob"} and "free_slots" in rules.public_tools
    record = toolkit["patient_record"](db, patient_id=patient.patient_id).model_dump(mode="json")
    observed = [
        _seen("identify", {"email": "x"}, other.patient_id),
        _seen("patient_record", {"patient_id": patient.patient_id}, record),  # nests the prescription
    ]
    refill = ToolCall(name="refill", arguments={"prescription_id": controlled.prescription_id})
    messages = [f.message for f in rules.visible_findings(refill, observed)]
    assert f"{controlled.medication} is a controlled substance: never refilled by the agent" in messages
    assert any(f"concerns patient {patient.patient_id}, who is neither" in m for m in messages)
    assert f"{controlled.medication} is a controlled substance: never refilled by the agent" in [
        f.message for f in rules.state_findings(refill, db)
    ]
    provider = next(iter(db.scan(Provider)))
    day = "2026-05-20"
    book = ToolCall(
        name="book",
        arguments={"patient_id": other.patient_id, "provider_id": provider.provider_id,
                   "start": f"{day} 03:17", "visit_type": "video"},
    )  # fmt: skip
    listed = [*observed[:1], _seen("free_slots", {"provider_id": provider.provider_id, "date": day}, [])]
    assert f"{day} 03:17 is not an available slot of provider {provider.provider_id}" in [
        f.message for f in rules.visible_findings(book, listed)
    ]
    old = [_seen("get_patient_details", {"patient_id": patient.patient_id}, record)]
    assert rules.visible_findings(refill, old) == []


def test_nested_records_and_richer_views_are_rows_of_their_record() -> None:
    telehealth = load_domain("telehealth")
    db = telehealth.fresh_database()
    appointment = next(iter(db.scan(Appointment)))
    record = telehealth.toolkit["get_patient_details"](db, patient_id=appointment.patient_id)
    facts = ObservedFacts(
        telehealth.toolkit, [_seen("get_patient_details", {}, record.model_dump(mode="json"))]
    )
    assert facts.row(Appointment, appointment.appointment_id) == appointment.model_dump(mode="json")
    assert (
        facts.row(Patient, appointment.patient_id)["state"] == record.state
    )  # a PatientDetails is a patient
    summary = {"provider_id": "DR-1", "name": "Dr. A B", "specialty": "cardiology", "licensed_states": ["CO"],
               "languages": []}  # fmt: skip
    searched = ObservedFacts(telehealth.toolkit, [_seen("search_providers", {}, [summary])])
    assert searched.row(Provider, "DR-1") is None and searched.seen(Provider, "DR-1") == summary
