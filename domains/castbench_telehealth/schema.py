"""The telehealth service's records: patients, providers, appointments, prescriptions,
pharmacies, insurance plans and clinician escalations.

Times are naive ISO strings in UTC ("2026-05-20 09:30" for a slot, dates as "2026-05-20"); every
slot lasts 30 minutes, so two appointments conflict iff they start at the same minute.
Money is a float rounded to cents (`money()`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from castbench.domain import Record

__all__ = [
    "SPECIALTIES",
    "SYMPTOMS",
    "Appointment",
    "AppointmentStatus",
    "CancelReason",
    "DependentSummary",
    "Escalation",
    "InsurancePlan",
    "PatientDetails",
    "Patient",
    "Pharmacy",
    "Prescription",
    "Provider",
    "ProviderSummary",
    "Specialty",
    "Symptom",
    "Tier",
    "Urgency",
    "VisitType",
    "Weekday",
    "money",
    "tier_of",
]

Specialty = Literal[
    "primary care",
    "pediatrics",
    "dermatology",
    "cardiology",
    "endocrinology",
    "psychiatry",
    "gastroenterology",
    "allergy and immunology",
]
SPECIALTIES: tuple[str, ...] = Specialty.__args__  # type: ignore[attr-defined]
Tier = Literal["primary", "specialist", "mental health"]
VisitType = Literal["video", "phone"]
AppointmentStatus = Literal["scheduled", "completed", "cancelled"]
CancelReason = Literal["schedule conflict", "no longer needed", "booked by mistake"]
Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
Urgency = Literal["emergency", "urgent"]
Symptom = Literal[
    "chest pain",
    "difficulty breathing",
    "stroke symptoms",
    "severe bleeding",
    "severe allergic reaction",
    "loss of consciousness",
    "high fever",
    "medication side effect",
    "worsening symptoms",
]
SYMPTOMS: tuple[str, ...] = Symptom.__args__  # type: ignore[attr-defined]


def money(amount: float) -> float:
    """An amount rounded to cents (the one rounding rule of the domain)."""
    return round(amount + 0.0, 2)


def tier_of(specialty: str) -> Tier:
    """The coverage tier of a specialty: what decides a visit's copay, with the visit type."""
    if specialty in ("primary care", "pediatrics"):
        return "primary"
    if specialty == "psychiatry":
        return "mental health"
    return "specialist"


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InsurancePlan(Record):
    table: ClassVar[str] = "plans"
    key_field: ClassVar[str] = "plan_id"

    plan_id: str
    name: str
    copays: dict[Tier, dict[VisitType, float]]
    """Copay per coverage tier and visit type."""


class Pharmacy(Record):
    table: ClassVar[str] = "pharmacies"
    key_field: ClassVar[str] = "pharmacy_id"

    pharmacy_id: str
    name: str
    street: str
    city: str
    state: str
    phone: str
    hours: str


class Patient(Record):
    table: ClassVar[str] = "patients"
    key_field: ClassVar[str] = "patient_id"

    patient_id: str
    first_name: str
    last_name: str
    date_of_birth: str
    email: str | None
    """Minors have none: their guardian speaks for them."""
    state: str
    """State of residence, two letters; providers must be licensed there."""
    plan_id: str | None
    """Insurance plan; `None` means self-pay."""
    allergies: list[str]
    conditions: list[str]
    medications: list[str]
    preferred_pharmacy_id: str
    guardian_id: str | None = None
    """For a minor: the patient id of the guardian who may act for them."""


class Provider(Record):
    table: ClassVar[str] = "providers"
    key_field: ClassVar[str] = "provider_id"

    provider_id: str
    first_name: str
    last_name: str
    specialty: Specialty
    licensed_states: list[str]
    languages: list[str]
    schedule: dict[Weekday, list[str]]
    """Weekly slot start times ("HH:MM", UTC) per weekday it works."""


class Appointment(Record):
    table: ClassVar[str] = "appointments"
    key_field: ClassVar[str] = "appointment_id"

    appointment_id: str
    patient_id: str
    provider_id: str
    start: str
    """Slot start, "YYYY-MM-DD HH:MM" UTC."""
    visit_type: VisitType
    status: AppointmentStatus
    copay: float
    cancel_reason: CancelReason | None = None


class Prescription(Record):
    table: ClassVar[str] = "prescriptions"
    key_field: ClassVar[str] = "prescription_id"

    prescription_id: str
    patient_id: str
    medication: str
    controlled: bool
    """A controlled substance: never refilled through this service."""
    refills_left: int
    pharmacy_id: str
    prescriber_id: str
    last_refill_requested: str | None = None


class Escalation(Record):
    table: ClassVar[str] = "escalations"
    key_field: ClassVar[str] = "escalation_id"

    escalation_id: str
    patient_id: str
    symptom: Symptom
    urgency: Urgency
    created_at: str


# -- what the read tools return (views, not stored) ----------------------------------------------
class ProviderSummary(_Part):
    provider_id: str
    name: str
    specialty: Specialty
    licensed_states: list[str]
    languages: list[str]


class DependentSummary(_Part):
    patient_id: str
    name: str
    date_of_birth: str


class PatientDetails(Patient):
    """A patient with their appointments, prescriptions and the minors they are guardian of."""

    appointments: list[Appointment] = Field(default_factory=list)
    prescriptions: list[Prescription] = Field(default_factory=list)
    dependents: list[DependentSummary] = Field(default_factory=list)
