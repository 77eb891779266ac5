"""The service's tools enforce the scheduling preconditions; errors reach the agent as observations
and leave the state as it was."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest

from castbench.domain import Database, Domain
from castbench_telehealth.schema import Appointment, Patient, Pharmacy, Prescription, Provider
from castbench_telehealth.tools import available_slots


def _call(telehealth: Domain, db: Database, name: str, **arguments: object):  # type: ignore[no-untyped-def]
    return telehealth.toolkit.call(db, name, arguments)


def _refused(telehealth: Domain, db: Database, name: str, needle: str, **arguments: object) -> None:
    observation = _call(telehealth, db, name, **arguments)
    assert observation.error, observation.content
    assert needle in observation.content, observation.content
    assert not db.has_changes()


def _bookable(db: Database) -> tuple[Patient, Provider, str]:
    """An adult patient, a provider licensed in their state, and a free slot of it."""
    for patient in sorted(db.scan(Patient), key=lambda p: p.patient_id):
        for provider in sorted(db.scan(Provider), key=lambda p: p.provider_id):
            if patient.state not in provider.licensed_states:
                continue
            for offset in range(1, 15):
                slots = available_slots(db, provider, db.now.date() + timedelta(days=offset))
                if slots:
                    return patient, provider, slots[0]
    raise AssertionError("no bookable slot in the seed state")


def test_every_parameter_is_described_in_the_schema(telehealth: Domain) -> None:
    assert len(telehealth.toolkit) == 17
    for schema in telehealth.toolkit.schemas:
        function = schema["function"]
        assert function["description"]
        for name, spec in function["parameters"]["properties"].items():
            assert spec.get("description"), f"{function['name']}.{name}"


def test_enumerations_are_in_the_schema(telehealth: Domain) -> None:
    cancel = telehealth.toolkit["cancel_appointment"].schema["function"]["parameters"]["properties"]
    assert cancel["reason"]["enum"] == ["schedule conflict", "no longer needed", "booked by mistake"]
    escalate = telehealth.toolkit["escalate_to_clinician"].schema["function"]["parameters"]["properties"]
    assert escalate["urgency"]["enum"] == ["emergency", "urgent"]
    assert "chest pain" in escalate["symptom"]["enum"]


def test_patient_lookups_ignore_case(telehealth: Domain, db: Database) -> None:
    patient = next(p for p in db.scan(Patient) if p.email)
    assert (
        _call(telehealth, db, "find_patient_by_email", email=patient.email.upper()).content
        == patient.patient_id
    )  # type: ignore[union-attr]
    found = _call(
        telehealth,
        db,
        "find_patient_by_name_dob",
        first_name=patient.first_name.lower(),
        last_name=patient.last_name.upper(),
        date_of_birth=patient.date_of_birth,
    )
    assert found.content == patient.patient_id
    assert _call(telehealth, db, "find_patient_by_email", email="nobody@example.org").error
    bad = _call(
        telehealth, db, "find_patient_by_name_dob", first_name="A", last_name="B", date_of_birth="May 1"
    )
    assert bad.error and "YYYY-MM-DD" in bad.content


def test_patient_details_list_appointments_prescriptions_and_dependents(
    telehealth: Domain, db: Database
) -> None:
    child = next(p for p in db.scan(Patient) if p.guardian_id)
    record = json.loads(_call(telehealth, db, "get_patient_details", patient_id=child.guardian_id).content)
    assert child.patient_id in [d["patient_id"] for d in record["dependents"]]
    assert all(a["patient_id"] == child.guardian_id for a in record["appointments"])
    assert all(rx["patient_id"] == child.guardian_id for rx in record["prescriptions"])


def test_search_providers_filters(telehealth: Domain, db: Database) -> None:
    found = json.loads(
        _call(
            telehealth, db, "search_providers", specialty="dermatology", state="co", language="english"
        ).content
    )
    assert found and all("CO" in p["licensed_states"] and p["specialty"] == "dermatology" for p in found)
    assert _call(telehealth, db, "search_providers", specialty="dentistry").error


def test_booking_a_free_slot_charges_the_plan_copay(telehealth: Domain, db: Database) -> None:
    patient, provider, slot = _bookable(db)
    coverage = json.loads(
        _call(
            telehealth,
            db,
            "check_coverage",
            patient_id=patient.patient_id,
            specialty=provider.specialty,
            visit_type="phone",
        ).content
    )
    booked = _call(
        telehealth,
        db,
        "book_appointment",
        patient_id=patient.patient_id,
        provider_id=provider.provider_id,
        start=slot,
        visit_type="phone",
    )
    assert not booked.error, booked.content
    appointment = json.loads(booked.content)
    assert appointment["status"] == "scheduled" and f"${appointment['copay']:.2f}" == coverage["copay"]
    assert slot not in available_slots(db, provider, date.fromisoformat(slot[:10]))
    again = _call(
        telehealth,
        db,
        "book_appointment",
        patient_id=patient.patient_id,
        provider_id=provider.provider_id,
        start=slot,
        visit_type="video",
    )
    assert again.error and "not an available slot" in again.content


def test_booking_refuses_slots_off_schedule_past_or_taken(telehealth: Domain, db: Database) -> None:
    patient, provider, slot = _bookable(db)
    args = {"patient_id": patient.patient_id, "provider_id": provider.provider_id, "visit_type": "video"}
    _refused(telehealth, db, "book_appointment", "not an available slot", **args, start=slot[:11] + "03:17")
    _refused(telehealth, db, "book_appointment", "in the past", **args, start="2026-05-01 09:00")
    _refused(telehealth, db, "book_appointment", "days ahead", **args, start="2026-09-01 09:00")
    _refused(telehealth, db, "book_appointment", "YYYY-MM-DD HH:MM", **args, start="next Tuesday")
    taken = next(a for a in db.scan(Appointment) if a.status == "scheduled")
    _refused(
        telehealth,
        db,
        "book_appointment",
        "not an available slot",
        patient_id=patient.patient_id,
        provider_id=taken.provider_id,
        start=taken.start,
        visit_type="video",
    )


def test_a_patient_cannot_hold_two_appointments_at_once(telehealth: Domain, db: Database) -> None:
    for mine in sorted(db.scan(Appointment), key=lambda a: a.appointment_id):
        if mine.status != "scheduled":
            continue
        patient = db.get(Patient, mine.patient_id)
        day = date.fromisoformat(mine.start[:10])
        other = next(
            (
                p
                for p in db.scan(Provider)
                if p.provider_id != mine.provider_id and mine.start in available_slots(db, p, day)
            ),
            None,
        )
        if other is not None:
            break
    _refused(
        telehealth,
        db,
        "book_appointment",
        "already has appointment",
        patient_id=patient.patient_id,
        provider_id=other.provider_id,
        start=mine.start,
        visit_type="video",
    )


def test_only_scheduled_appointments_move_or_cancel(telehealth: Domain, db: Database) -> None:
    done = next(a for a in db.scan(Appointment) if a.status == "completed")
    _refused(
        telehealth,
        db,
        "cancel_appointment",
        "'completed'",
        appointment_id=done.appointment_id,
        reason="no longer needed",
    )
    _refused(
        telehealth,
        db,
        "reschedule_appointment",
        "'completed'",
        appointment_id=done.appointment_id,
        new_start="2026-05-20 09:00",
    )
    _refused(
        telehealth,
        db,
        "cancel_appointment",
        "not found",
        appointment_id="APT-999999",
        reason="no longer needed",
    )
    scheduled = next(a for a in db.scan(Appointment) if a.status == "scheduled")
    _refused(
        telehealth,
        db,
        "cancel_appointment",
        "Input should be",
        appointment_id=scheduled.appointment_id,
        reason="meh",
    )


def test_cancel_frees_the_slot_and_reschedule_keeps_the_provider(telehealth: Domain, db: Database) -> None:
    appointment = next(a for a in db.scan(Appointment) if a.status == "scheduled")
    provider = db.get(Provider, appointment.provider_id)
    day = date.fromisoformat(appointment.start[:10])
    assert appointment.start not in available_slots(db, provider, day)
    moved_to = available_slots(db, provider, day)
    if moved_to:
        moved = _call(
            telehealth,
            db,
            "reschedule_appointment",
            appointment_id=appointment.appointment_id,
            new_start=moved_to[0],
        )
        assert not moved.error and json.loads(moved.content)["provider_id"] == provider.provider_id
    cancelled = _call(
        telehealth,
        db,
        "cancel_appointment",
        appointment_id=appointment.appointment_id,
        reason="schedule conflict",
    )
    assert json.loads(cancelled.content)["status"] == "cancelled"
    assert appointment.start in available_slots(db, provider, day)


def test_refill_uses_a_refill_and_refuses_when_none_left(telehealth: Domain, db: Database) -> None:
    empty = next(rx for rx in db.scan(Prescription) if rx.refills_left == 0)
    _refused(telehealth, db, "request_refill", "no refills left", prescription_id=empty.prescription_id)
    some = next(rx for rx in db.scan(Prescription) if rx.refills_left > 0 and not rx.controlled)
    result = json.loads(_call(telehealth, db, "request_refill", prescription_id=some.prescription_id).content)
    assert result["refills_left"] == some.refills_left - 1
    assert db.get(Prescription, some.prescription_id).last_refill_requested == "2026-05-15 08:00"


def test_policy_only_rules_are_left_to_the_agent(telehealth: Domain, db: Database) -> None:
    """The back end serves clinicians too: it books out-of-state providers and refills controlled
    substances. Only the policy (and the rules) forbid the agent to."""
    controlled = next(rx for rx in db.scan(Prescription) if rx.controlled and rx.refills_left > 0)
    assert not _call(telehealth, db, "request_refill", prescription_id=controlled.prescription_id).error


def test_pharmacies_must_be_in_the_patients_state(telehealth: Domain, db: Database) -> None:
    rx = next(iter(sorted(db.scan(Prescription), key=lambda r: r.prescription_id)))
    patient = db.get(Patient, rx.patient_id)
    far = next(ph for ph in db.scan(Pharmacy) if ph.state != patient.state)
    _refused(
        telehealth,
        db,
        "transfer_prescription",
        "the patient lives in",
        prescription_id=rx.prescription_id,
        pharmacy_id=far.pharmacy_id,
    )
    _refused(
        telehealth,
        db,
        "update_preferred_pharmacy",
        "the patient lives in",
        patient_id=patient.patient_id,
        pharmacy_id=far.pharmacy_id,
    )
    _refused(
        telehealth,
        db,
        "transfer_prescription",
        "already goes",
        prescription_id=rx.prescription_id,
        pharmacy_id=rx.pharmacy_id,
    )
    listed = json.loads(_call(telehealth, db, "search_pharmacies", state=patient.state.lower()).content)
    assert listed and all(ph["state"] == patient.state for ph in listed)


def test_escalation_records_and_says_911(telehealth: Domain, db: Database) -> None:
    patient = next(db.scan(Patient))
    result = _call(
        telehealth,
        db,
        "escalate_to_clinician",
        patient_id=patient.patient_id,
        symptom="chest pain",
        urgency="emergency",
    )
    assert "911" in result.content and json.loads(result.content)["escalation_id"] == "ESC-0001"
    assert db.touched()["escalations"] == {"ESC-0001"}
    _refused(
        telehealth,
        telehealth.fresh_database(),
        "escalate_to_clinician",
        "not found",
        patient_id="PT-000000",
        symptom="chest pain",
        urgency="emergency",
    )


def test_coverage_quotes_self_pay_without_a_plan(telehealth: Domain, db: Database) -> None:
    uninsured = next(p for p in db.scan(Patient) if p.plan_id is None)
    quote = json.loads(
        _call(
            telehealth,
            db,
            "check_coverage",
            patient_id=uninsured.patient_id,
            specialty="psychiatry",
            visit_type="video",
        ).content
    )
    assert quote == {
        "plan": "self-pay",
        "specialty": "psychiatry",
        "tier": "mental health",
        "visit_type": "video",
        "copay": "$129.00",
    }


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('true')",
        "'a' * 10",
        "2 ** 999999",
        "open('/etc/passwd')",
        "x + 1",
        "True + 1",
    ],
)
def test_calculate_rejects_anything_but_arithmetic(telehealth: Domain, db: Database, expression: str) -> None:
    assert _call(telehealth, db, "calculate", expression=expression).error


def test_calculate_rounds_to_cents(telehealth: Domain, db: Database) -> None:
    assert _call(telehealth, db, "calculate", expression="(35 + 12.5) * 2 / 3").content == "31.67"
    assert _call(telehealth, db, "calculate", expression="1 / 0").error


def test_transfer_ends_the_conversation_without_changes(telehealth: Domain, db: Database) -> None:
    observation = _call(telehealth, db, "transfer_to_human_agents", summary="billing dispute")
    assert observation.ends_conversation and not observation.error and not db.has_changes()
