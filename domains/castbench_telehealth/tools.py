"""The telehealth service's tools: what a patient-support agent can look up and change.

The back end checks what a scheduling system can know for sure: a slot must be on the
provider's schedule, free and in the future; a patient cannot hold two appointments at the same
time; only scheduled appointments move; a prescription with no refills left cannot be refilled.

Two rules of the policy are the agent's own job, because the same back end also serves
clinicians and care coordinators who may override them: a provider must be licensed in the
patient's state of residence, and a controlled substance is never refilled through this service.
An agent that breaks them changes the state, and grading sees it.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from castbench.domain import Database, ToolError, calculate, read_tool, transfer_to_human_agents, write_tool
from castbench_telehealth.schema import (
    Appointment,
    CancelReason,
    DependentSummary,
    Escalation,
    InsurancePlan,
    Patient,
    PatientDetails,
    Pharmacy,
    Prescription,
    Provider,
    ProviderSummary,
    Specialty,
    Symptom,
    Urgency,
    VisitType,
    tier_of,
)

__all__ = [
    "BOOKING_HORIZON_DAYS",
    "SELF_PAY",
    "TOOLS",
    "available_slots",
    "copay_for",
    "copay_for_plan",
    "parse_start",
]

BOOKING_HORIZON_DAYS = 60
"""Appointments can be booked up to this many days ahead."""
SELF_PAY: dict[str, dict[str, float]] = {
    "primary": {"video": 79.0, "phone": 59.0},
    "specialist": {"video": 149.0, "phone": 119.0},
    "mental health": {"video": 129.0, "phone": 109.0},
}
"""What a visit costs a patient without insurance."""
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


# -- helpers ---------------------------------------------------------------------------------
def _slot_text(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def parse_start(start: str) -> datetime:
    """A slot start "YYYY-MM-DD HH:MM" (a "T" separator is accepted too)."""
    try:
        return datetime.strptime(start.strip().replace("T", " "), "%Y-%m-%d %H:%M")
    except ValueError as exc:
        raise ToolError(f"'{start}' is not a slot start of the form 'YYYY-MM-DD HH:MM'") from exc


def _parse_date(day: str) -> date:
    try:
        return date.fromisoformat(day.strip())
    except ValueError as exc:
        raise ToolError(f"'{day}' is not a date of the form 'YYYY-MM-DD'") from exc


def _now(db: Database) -> datetime:
    return db.now.replace(tzinfo=None)


def available_slots(db: Database, provider: Provider, day: date) -> list[str]:
    """The provider's free, future slot starts on `day`, in order."""
    times = provider.schedule.get(_WEEKDAYS[day.weekday()], [])  # type: ignore[call-overload]
    taken = {
        appointment.start
        for appointment in db.find(Appointment, provider_id=provider.provider_id, status="scheduled")
    }
    now = _now(db)
    slots = []
    for time in sorted(times):
        start = f"{day.isoformat()} {time}"
        if start not in taken and parse_start(start) > now:
            slots.append(start)
    return slots


def _check_bookable(db: Database, patient_id: str, provider: Provider, start: str, ignore: str = "") -> str:
    """The canonical slot text if `start` can be booked for the patient (else a ToolError)."""
    moment = parse_start(start)
    text = _slot_text(moment)
    if moment <= _now(db):
        raise ToolError(f"slot {text} is in the past")
    if moment.date() > _now(db).date() + timedelta(days=BOOKING_HORIZON_DAYS):
        raise ToolError(f"slot {text} is more than {BOOKING_HORIZON_DAYS} days ahead")
    if text not in available_slots(db, provider, moment.date()):
        raise ToolError(f"slot {text} is not an available slot of provider {provider.provider_id}")
    for other in db.find(Appointment, patient_id=patient_id, status="scheduled"):
        if other.start == text and other.appointment_id != ignore:
            raise ToolError(f"patient {patient_id} already has appointment {other.appointment_id} at {text}")
    return text


def copay_for_plan(plan: InsurancePlan | None, specialty: str, visit_type: str) -> float:
    """What a visit costs under `plan` (`None`: self-pay)."""
    tier = tier_of(specialty)
    if plan is None:
        return SELF_PAY[tier][visit_type]
    return plan.copays[tier][visit_type]  # type: ignore[index]


def copay_for(db: Database, patient: Patient, specialty: str, visit_type: str) -> float:
    plan = None if patient.plan_id is None else db.get(InsurancePlan, patient.plan_id)
    return copay_for_plan(plan, specialty, visit_type)


def _scheduled(db: Database, appointment_id: str) -> Appointment:
    appointment = db.get(Appointment, appointment_id)
    if appointment.status != "scheduled":
        raise ToolError(
            f"appointment {appointment_id} is '{appointment.status}'; only scheduled ones can change"
        )
    if parse_start(appointment.start) <= _now(db):
        raise ToolError(f"appointment {appointment_id} has already started")
    return appointment


def _name(person: Patient | Provider) -> str:
    return f"{person.first_name} {person.last_name}"


def _pharmacy_in_state(db: Database, pharmacy_id: str, patient: Patient) -> Pharmacy:
    pharmacy = db.get(Pharmacy, pharmacy_id)
    if pharmacy.state != patient.state:
        raise ToolError(
            f"pharmacy {pharmacy_id} is in {pharmacy.state}; the patient lives in {patient.state}"
        )
    return pharmacy


# -- identity --------------------------------------------------------------------------------
@read_tool(authenticates=True)
def find_patient_by_email(db: Database, email: str) -> str:
    """Find a patient's id from their email address.

    Args:
        email: The patient's email address, e.g. 'maya.okafor@example.org'.
    """
    wanted = email.strip().lower()
    for patient in db.scan(Patient):
        if patient.email is not None and patient.email.lower() == wanted:
            return patient.patient_id
    raise ToolError(f"no patient with email '{email}'")


@read_tool(authenticates=True)
def find_patient_by_name_dob(db: Database, first_name: str, last_name: str, date_of_birth: str) -> str:
    """Find a patient's id from their first name, last name and date of birth.

    Args:
        first_name: The patient's first name, e.g. 'Maya'.
        last_name: The patient's last name, e.g. 'Okafor'.
        date_of_birth: The patient's date of birth as YYYY-MM-DD, e.g. '1984-03-09'.
    """
    born = _parse_date(date_of_birth).isoformat()
    wanted = (first_name.strip().lower(), last_name.strip().lower())
    for patient in db.find(Patient, date_of_birth=born):  # the index narrows; names match in any case
        if (patient.first_name.lower(), patient.last_name.lower()) == wanted:
            return patient.patient_id
    raise ToolError("no patient with that first name, last name and date of birth")


# -- look-ups --------------------------------------------------------------------------------
@read_tool
def get_patient_details(db: Database, patient_id: str) -> PatientDetails:
    """Get a patient's record: identity, state of residence, insurance plan, allergies,
    conditions, medications, preferred pharmacy, guardian, appointments, prescriptions, and the
    minors they are the guardian of.

    Args:
        patient_id: The patient id, e.g. 'PT-204817'.
    """
    patient = db.get(Patient, patient_id)
    appointments = sorted(
        db.find(Appointment, patient_id=patient_id), key=lambda a: (a.start, a.appointment_id)
    )
    prescriptions = sorted(db.find(Prescription, patient_id=patient_id), key=lambda p: p.prescription_id)
    dependents = [
        DependentSummary(patient_id=child.patient_id, name=_name(child), date_of_birth=child.date_of_birth)
        for child in sorted(db.find(Patient, guardian_id=patient_id), key=lambda c: c.patient_id)
    ]
    return PatientDetails(
        **patient.model_dump(), appointments=appointments, prescriptions=prescriptions, dependents=dependents
    )


@read_tool(public=True)
def get_provider_details(db: Database, provider_id: str) -> Provider:
    """Get a provider: name, specialty, states licensed in, languages and weekly schedule.

    Args:
        provider_id: The provider id, e.g. 'DR-3301'.
    """
    return db.get(Provider, provider_id)


@read_tool(public=True, returns=Provider)
def search_providers(
    db: Database,
    specialty: Specialty,
    state: str | None = None,
    language: str | None = None,
    last_name: str | None = None,
) -> list[ProviderSummary]:
    """Search providers of a specialty, optionally only those licensed in a state, speaking a
    language, or with a given last name.

    Args:
        specialty: The provider's specialty.
        state: Only providers licensed in this state (two-letter code, e.g. 'CO'); omit for any state.
        language: Only providers who speak this language, e.g. 'Spanish'; omit for any language.
        last_name: Only providers with this last name, e.g. 'Lindqvist'; omit for any name.
    """
    found = []
    for provider in sorted(db.find(Provider, specialty=specialty), key=lambda p: p.provider_id):
        if state and state.strip().upper() not in provider.licensed_states:
            continue
        if language and language.strip().lower() not in [lang.lower() for lang in provider.languages]:
            continue
        if last_name and last_name.strip().lower() != provider.last_name.lower():
            continue
        found.append(
            ProviderSummary(
                provider_id=provider.provider_id,
                name=f"Dr. {_name(provider)}",
                specialty=provider.specialty,
                licensed_states=provider.licensed_states,
                languages=provider.languages,
            )
        )
    return found


@read_tool(public=True)
def list_available_slots(db: Database, provider_id: str, date: str) -> list[str]:
    """List a provider's free appointment slots (30 minutes each, UTC) on one date.

    Args:
        provider_id: The provider id, e.g. 'DR-3301'.
        date: The date as YYYY-MM-DD, e.g. '2026-05-20'.
    """
    provider = db.get(Provider, provider_id)
    day = _parse_date(date)
    if day > _now(db).date() + timedelta(days=BOOKING_HORIZON_DAYS):
        raise ToolError(f"{date} is more than {BOOKING_HORIZON_DAYS} days ahead")
    return available_slots(db, provider, day)


@read_tool(public=True)
def search_pharmacies(db: Database, state: str, city: str | None = None) -> list[Pharmacy]:
    """List the partner pharmacies in a state, optionally in one city.

    Args:
        state: Two-letter state code, e.g. 'AZ'.
        city: Only pharmacies in this city, e.g. 'Tucson'; omit for the whole state.
    """
    wanted = state.strip().upper()
    pharmacies = [
        pharmacy
        for pharmacy in db.find(Pharmacy, state=wanted)
        if not city or pharmacy.city.lower() == city.strip().lower()
    ]
    return sorted(pharmacies, key=lambda p: p.pharmacy_id)


@read_tool
def check_coverage(
    db: Database, patient_id: str, specialty: Specialty, visit_type: VisitType
) -> dict[str, str]:
    """Look up what a visit would cost the patient under their insurance plan (or self-pay).

    Args:
        patient_id: The patient id, e.g. 'PT-204817'.
        specialty: The specialty of the visit.
        visit_type: 'video' or 'phone'.
    """
    patient = db.get(Patient, patient_id)
    plan = "self-pay" if patient.plan_id is None else db.get(InsurancePlan, patient.plan_id).name
    return {
        "plan": plan,
        "specialty": specialty,
        "tier": tier_of(specialty),
        "visit_type": visit_type,
        "copay": f"${copay_for(db, patient, specialty, visit_type):.2f}",
    }


# -- appointments ----------------------------------------------------------------------------
@write_tool
def book_appointment(
    db: Database, patient_id: str, provider_id: str, start: str, visit_type: VisitType
) -> Appointment:
    """Book a 30-minute telehealth visit in a free slot of a provider; the copay comes from the
    patient's plan.

    Args:
        patient_id: The patient id, e.g. 'PT-204817'.
        provider_id: The provider id, e.g. 'DR-3301'.
        start: The slot start as 'YYYY-MM-DD HH:MM' (UTC), one listed by list_available_slots.
        visit_type: 'video' or 'phone'.
    """
    patient = db.get(Patient, patient_id)
    provider = db.get(Provider, provider_id)
    text = _check_bookable(db, patient_id, provider, start)
    appointment = Appointment(
        appointment_id=db.new_id("appointment"),
        patient_id=patient_id,
        provider_id=provider_id,
        start=text,
        visit_type=visit_type,
        status="scheduled",
        copay=copay_for(db, patient, provider.specialty, visit_type),
    )
    db.insert(appointment)
    return appointment


@write_tool
def reschedule_appointment(db: Database, appointment_id: str, new_start: str) -> Appointment:
    """Move a scheduled appointment to another free slot of the same provider.

    Args:
        appointment_id: The appointment id, e.g. 'APT-310422'.
        new_start: The new slot start as 'YYYY-MM-DD HH:MM' (UTC), one listed by list_available_slots.
    """
    appointment = _scheduled(db, appointment_id)
    provider = db.get(Provider, appointment.provider_id)
    text = _check_bookable(db, appointment.patient_id, provider, new_start, ignore=appointment_id)
    appointment.start = text
    db.put(appointment)
    return appointment


@write_tool
def cancel_appointment(db: Database, appointment_id: str, reason: CancelReason) -> Appointment:
    """Cancel a scheduled appointment; its slot becomes free again.

    Args:
        appointment_id: The appointment id, e.g. 'APT-310422'.
        reason: Why the patient cancels: 'schedule conflict', 'no longer needed' or 'booked by mistake'.
    """
    appointment = _scheduled(db, appointment_id)
    appointment.status = "cancelled"
    appointment.cancel_reason = reason
    db.put(appointment)
    return appointment


# -- prescriptions and pharmacies ------------------------------------------------------------
@write_tool(returns=Prescription)
def request_refill(db: Database, prescription_id: str) -> dict[str, str | int]:
    """Send a refill of a prescription to its pharmacy; uses one of the refills left.

    Args:
        prescription_id: The prescription id, e.g. 'RX-581204'.
    """
    prescription = db.get(Prescription, prescription_id)
    if prescription.refills_left <= 0:
        raise ToolError(f"prescription {prescription_id} has no refills left")
    prescription.refills_left -= 1
    prescription.last_refill_requested = _slot_text(_now(db))
    db.put(prescription)
    pharmacy = db.get(Pharmacy, prescription.pharmacy_id)
    return {
        "prescription_id": prescription_id,
        "medication": prescription.medication,
        "refills_left": prescription.refills_left,
        "pharmacy": f"{pharmacy.name}, {pharmacy.street}, {pharmacy.city}, {pharmacy.state}",
        "status": "refill requested",
    }


@write_tool
def transfer_prescription(db: Database, prescription_id: str, pharmacy_id: str) -> Prescription:
    """Send one prescription (and its future refills) to another partner pharmacy in the
    patient's state.

    Args:
        prescription_id: The prescription id, e.g. 'RX-581204'.
        pharmacy_id: The new pharmacy id, e.g. 'PH-014'.
    """
    prescription = db.get(Prescription, prescription_id)
    patient = db.get(Patient, prescription.patient_id)
    _pharmacy_in_state(db, pharmacy_id, patient)
    if prescription.pharmacy_id == pharmacy_id:
        raise ToolError(f"prescription {prescription_id} already goes to pharmacy {pharmacy_id}")
    prescription.pharmacy_id = pharmacy_id
    db.put(prescription)
    return prescription


@write_tool
def update_preferred_pharmacy(db: Database, patient_id: str, pharmacy_id: str) -> Patient:
    """Change the patient's preferred pharmacy, used for new prescriptions (existing
    prescriptions keep their pharmacy).

    Args:
        patient_id: The patient id, e.g. 'PT-204817'.
        pharmacy_id: The new pharmacy id, e.g. 'PH-014'.
    """
    patient = db.get(Patient, patient_id)
    _pharmacy_in_state(db, pharmacy_id, patient)
    if patient.preferred_pharmacy_id == pharmacy_id:
        raise ToolError(f"pharmacy {pharmacy_id} is already the preferred pharmacy")
    patient.preferred_pharmacy_id = pharmacy_id
    db.put(patient)
    return patient


# -- safety and hand-off ---------------------------------------------------------------------
@write_tool
def escalate_to_clinician(
    db: Database, patient_id: str, symptom: Symptom, urgency: Urgency
) -> dict[str, str]:
    """Record an escalation so that an on-call clinician contacts the patient about a symptom.

    Args:
        patient_id: The patient id, e.g. 'PT-204817'.
        symptom: The symptom the patient reports.
        urgency: 'emergency' for the emergency symptoms of the policy, else 'urgent'.
    """
    db.get(Patient, patient_id)
    escalation = Escalation(
        escalation_id=db.new_id("escalation"),
        patient_id=patient_id,
        symptom=symptom,
        urgency=urgency,
        created_at=_slot_text(_now(db)),
    )
    db.insert(escalation)
    advice = (
        "This is an emergency: the patient must call 911 now; a clinician will follow up."
        if urgency == "emergency"
        else "An on-call clinician will call the patient back within 2 hours."
    )
    return {"escalation_id": escalation.escalation_id, "status": "escalated", "advice": advice}


TOOLS = [
    find_patient_by_email,
    find_patient_by_name_dob,
    get_patient_details,
    get_provider_details,
    search_providers,
    list_available_slots,
    search_pharmacies,
    check_coverage,
    calculate,
    book_appointment,
    reschedule_appointment,
    cancel_appointment,
    request_refill,
    transfer_prescription,
    update_preferred_pharmacy,
    escalate_to_clinician,
    transfer_to_human_agents,
]
