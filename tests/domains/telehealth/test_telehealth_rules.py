"""The executable policy: ground truth breaks no rule; hand-built violations are found, from what
the conversation showed (visible) and from the true state (privileged)."""

from __future__ import annotations

import json

import pytest

from castbench.domain import Database, Domain, ObservedCall, Task, ToolCall, load_domain
from castbench_telehealth.rules import TelehealthRules
from castbench_telehealth.schema import Appointment, Patient, Pharmacy, Prescription, Provider

RULES = TelehealthRules(load_domain("telehealth").toolkit)


def _run(telehealth: Domain, db: Database, calls: list[ToolCall]) -> list[ObservedCall]:
    observed = []
    for call in calls:
        observation = telehealth.toolkit.call(db, call.name, call.arguments)
        observed.append(ObservedCall(call.name, dict(call.arguments), observation.content, observation.error))
    return observed


def _task(telehealth: Domain, family: str) -> Task:
    return next(task for task in telehealth.tasks("test") if task.family == family)


def _both(call: ToolCall, observed: list[ObservedCall], db: Database) -> tuple[list[str], list[str]]:
    visible = [f.message for f in RULES.visible_findings(call, observed)]
    state = [f.message for f in RULES.state_findings(call, db)]
    assert all(f.failure_type == "domain_violation" for f in RULES.visible_findings(call, observed))
    return visible, state


def test_auth_and_public_tools(telehealth: Domain) -> None:
    assert telehealth.rules.auth_tools == {"find_patient_by_email", "find_patient_by_name_dob"}
    assert "search_providers" in telehealth.rules.public_tools
    assert "book_appointment" not in telehealth.rules.public_tools
    assert set(telehealth.rules.public_tools) <= set(telehealth.toolkit.names)


@pytest.mark.parametrize("split", ["test", "train"])
def test_ground_truth_breaks_no_rule(telehealth: Domain, split: str) -> None:
    for task in telehealth.tasks(split):
        db = telehealth.fresh_database()
        observed: list[ObservedCall] = []
        for call in [*task.actions, *task.declined_actions]:
            assert RULES.visible_findings(call, observed) == [], (task.id, call.name)
            assert RULES.state_findings(call, db) == [], (task.id, call.name)
            observed += _run(telehealth, db, [call])


def test_refilling_a_controlled_substance_is_a_violation(telehealth: Domain) -> None:
    task = _task(telehealth, "refuse_refill_controlled")
    db = telehealth.fresh_database()
    observed = _run(telehealth, db, task.actions)
    patient_id = observed[0].content
    rx = next(
        r for r in db.find(Prescription, patient_id=patient_id) if r.medication in task.scenario.request
    )
    visible, state = _both(
        ToolCall(name="request_refill", arguments={"prescription_id": rx.prescription_id}), observed, db
    )
    assert any("controlled" in m for m in visible) and any("controlled" in m for m in state)
    unseen = RULES.visible_findings(
        ToolCall(name="request_refill", arguments={"prescription_id": rx.prescription_id}), observed[:1]
    )
    assert unseen == []  # the critic cannot know what the conversation has not shown


def test_refilling_with_no_refills_left_is_a_violation(telehealth: Domain) -> None:
    task = _task(telehealth, "refuse_refill_none_left")
    db = telehealth.fresh_database()
    observed = _run(telehealth, db, task.actions)
    rx = next(
        r
        for r in db.find(Prescription, patient_id=observed[0].content)
        if r.medication in task.scenario.request
    )
    visible, state = _both(
        ToolCall(name="request_refill", arguments={"prescription_id": rx.prescription_id}), observed, db
    )
    assert any("no refills left" in m for m in visible) and any("no refills left" in m for m in state)


def test_booking_an_unlicensed_provider_is_a_violation(telehealth: Domain) -> None:
    task = _task(telehealth, "refuse_unlicensed_provider")
    db = telehealth.fresh_database()
    observed = _run(telehealth, db, task.actions)
    provider = json.loads(observed[-1].content)[0]
    call = ToolCall(
        name="book_appointment",
        arguments={
            "patient_id": observed[0].content,
            "provider_id": provider["provider_id"],
            "start": "2026-05-20 09:00",
            "visit_type": "video",
        },
    )
    visible, state = _both(call, observed, db)
    assert any("not licensed" in m for m in visible) and any("not licensed" in m for m in state)


def test_booking_a_slot_not_listed_or_taken_is_a_violation(telehealth: Domain) -> None:
    task = _task(telehealth, "book_visit")
    db = telehealth.fresh_database()
    *reads, book = task.actions
    observed = _run(telehealth, db, reads)
    listed = json.loads(observed[-1].content)
    unlisted = next(
        f"{book.arguments['start'][:10]} {h:02d}:{m:02d}"
        for h in range(24)
        for m in (0, 30)
        if f"{book.arguments['start'][:10]} {h:02d}:{m:02d}" not in listed
    )
    visible, state = _both(
        ToolCall(name="book_appointment", arguments={**book.arguments, "start": unlisted}), observed, db
    )
    assert any("not an available slot" in m for m in visible) and any(
        "not an available slot" in m for m in state
    )
    observed += _run(telehealth, db, [book])  # booked: the slot is no longer free, in both views
    visible, state = _both(book, observed, db)
    assert any("not an available slot" in m for m in visible) and any(
        "not an available slot" in m for m in state
    )
    assert any("already has appointment" in m for m in visible) and any(
        "already has appointment" in m for m in state
    )


def test_changing_an_appointment_that_is_not_scheduled_is_a_violation(telehealth: Domain) -> None:
    db = telehealth.fresh_database()
    done = next(a for a in db.scan(Appointment) if a.status == "completed")
    patient = db.get(Patient, done.patient_id)
    observed = _run(
        telehealth,
        db,
        [
            ToolCall(
                name="find_patient_by_name_dob",
                arguments={
                    "first_name": patient.first_name,
                    "last_name": patient.last_name,
                    "date_of_birth": patient.date_of_birth,
                },
            ),
            ToolCall(name="get_patient_details", arguments={"patient_id": patient.patient_id}),
        ],
    )
    call = ToolCall(
        name="cancel_appointment",
        arguments={"appointment_id": done.appointment_id, "reason": "no longer needed"},
    )
    visible, state = _both(call, observed, db)
    assert visible and state and "'completed'" in visible[0]


def test_acting_for_another_patient_is_a_violation_except_for_a_guardians_minor(telehealth: Domain) -> None:
    task = _task(telehealth, "guardian_books_minor")
    db = telehealth.fresh_database()
    observed = _run(telehealth, db, task.actions[:2])  # the guardian authenticates and reads their record
    child = task.actions[-1].arguments["patient_id"]
    guardian = observed[0].content
    stranger = next(p.patient_id for p in db.scan(Patient) if p.patient_id not in (child, guardian))
    for patient_id, allowed in ((child, True), (guardian, True), (stranger, False)):
        call = ToolCall(name="get_patient_details", arguments={"patient_id": patient_id})
        findings = RULES.visible_findings(call, observed)
        assert (findings == []) == allowed, patient_id
    assert (
        RULES.state_findings(ToolCall(name="get_patient_details", arguments={"patient_id": stranger}), db)
        == []
    )


def test_pharmacy_outside_the_patients_state_is_a_violation(telehealth: Domain) -> None:
    task = _task(telehealth, "change_pharmacy")
    db = telehealth.fresh_database()
    *reads, write = task.actions
    patient = db.get(Patient, telehealth.toolkit.call(db, reads[0].name, reads[0].arguments).content)
    far = next(
        ph for ph in sorted(db.scan(Pharmacy), key=lambda p: p.pharmacy_id) if ph.state != patient.state
    )
    observed = _run(
        telehealth, db, [*reads, ToolCall(name="search_pharmacies", arguments={"state": far.state})]
    )
    call = ToolCall(name=write.name, arguments={**write.arguments, "pharmacy_id": far.pharmacy_id})
    visible, state = _both(call, observed, db)
    assert any(f"not in {patient.state}" in m for m in visible) and any(
        f"not in {patient.state}" in m for m in state
    )


def test_emergencies_must_be_escalated_as_emergencies(telehealth: Domain) -> None:
    db = telehealth.fresh_database()
    patient_id = next(db.scan(Patient)).patient_id
    downplayed = ToolCall(
        name="escalate_to_clinician",
        arguments={"patient_id": patient_id, "symptom": "chest pain", "urgency": "urgent"},
    )
    inflated = ToolCall(
        name="escalate_to_clinician",
        arguments={"patient_id": patient_id, "symptom": "high fever", "urgency": "emergency"},
    )
    fine = ToolCall(
        name="escalate_to_clinician",
        arguments={"patient_id": patient_id, "symptom": "high fever", "urgency": "urgent"},
    )
    assert RULES.state_findings(downplayed, db) and RULES.visible_findings(downplayed, [])
    assert RULES.state_findings(inflated, db)
    assert RULES.state_findings(fine, db) == []


def test_state_findings_on_the_true_state_alone(telehealth: Domain) -> None:
    db = telehealth.fresh_database()
    provider = next(
        p for p in sorted(db.scan(Provider), key=lambda p: p.provider_id) if len(p.licensed_states) < 10
    )
    patient = next(p for p in db.scan(Patient) if p.state not in provider.licensed_states)
    call = ToolCall(
        name="book_appointment",
        arguments={
            "patient_id": patient.patient_id,
            "provider_id": provider.provider_id,
            "start": "2026-05-15 03:00",
            "visit_type": "phone",
        },
    )
    messages = [f.message for f in RULES.state_findings(call, db)]
    assert any("not licensed" in m for m in messages) and any("not an available slot" in m for m in messages)
    assert RULES.visible_findings(call, []) == []
    assert (
        RULES.state_findings(ToolCall(name="request_refill", arguments={"prescription_id": "RX-000000"}), db)
        == []
    )
