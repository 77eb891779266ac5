"""The seed state: plans, pharmacies, providers, patients, their appointments and prescriptions,
drawn from one `random.Random`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from random import Random

from castbench.domain import SEQUENCES_TABLE, Record, Row, UniqueDigits
from castbench_telehealth import NOW
from castbench_telehealth.schema import (
    SPECIALTIES,
    Appointment,
    AppointmentStatus,
    InsurancePlan,
    Patient,
    Pharmacy,
    Prescription,
    Provider,
)
from castbench_telehealth.tools import copay_for_plan
from castbench_telehealth.vocabulary import (
    ALLERGIES,
    CHILD_MEDICATIONS,
    CHILD_NAMES,
    EMAIL_DOMAINS,
    FIRST_NAMES,
    LANGUAGES,
    LAST_NAMES,
    MEDICATIONS,
    PHARMACY_HOURS,
    PHARMACY_NAMES,
    PLANS,
    PROVIDER_FIRST_NAMES,
    PROVIDER_LAST_NAMES,
    SPECIALTY_COUNTS,
    STATES,
    STREETS,
)

__all__ = ["World", "build_world"]

N_ADULTS = 262
N_MINORS = 40
APPOINTMENT_ID_START = 100001
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
BLOCKS = [
    ["09:00", "09:30", "10:00", "10:30", "11:00", "11:30"],
    ["13:00", "13:30", "14:00", "14:30", "15:00", "15:30", "16:00", "16:30"],
    ["17:00", "17:30", "18:00", "18:30", "19:00", "19:30"],
]
FIRST_PAST_DAY = date(2026, 1, 5)
LAST_FUTURE_DAY = date(2026, 6, 12)


@dataclass
class World:
    plans: dict[str, InsurancePlan]
    pharmacies: dict[str, Pharmacy]
    providers: dict[str, Provider]
    patients: dict[str, Patient]
    appointments: dict[str, Appointment] = field(default_factory=dict)
    prescriptions: dict[str, Prescription] = field(default_factory=dict)

    def state(self) -> dict[str, dict[str, Row]]:
        """table -> key -> row, as `data/state.json` stores it."""

        def rows(records: dict[str, Record]) -> dict[str, Row]:
            return {key: record.model_dump(mode="json") for key, record in records.items()}

        return {
            "plans": rows(self.plans),  # type: ignore[arg-type]
            "pharmacies": rows(self.pharmacies),  # type: ignore[arg-type]
            "providers": rows(self.providers),  # type: ignore[arg-type]
            "patients": rows(self.patients),  # type: ignore[arg-type]
            "appointments": rows(self.appointments),  # type: ignore[arg-type]
            "prescriptions": rows(self.prescriptions),  # type: ignore[arg-type]
            "escalations": {},
            SEQUENCES_TABLE: {
                "appointment": {
                    "next": APPOINTMENT_ID_START + len(self.appointments),
                    "prefix": "APT-",
                    "width": 6,
                },
                "escalation": {"next": 1, "prefix": "ESC-", "width": 4},
            },
        }

    def children_of(self, guardian_id: str) -> list[Patient]:
        return [p for p in self.patients.values() if p.guardian_id == guardian_id]


def _plans() -> dict[str, InsurancePlan]:
    plans = {}
    for number, (name, copays) in enumerate(PLANS.items(), start=1):
        plan_id = f"PLAN-{number:02d}"
        plans[plan_id] = InsurancePlan(plan_id=plan_id, name=name, copays=copays)  # type: ignore[arg-type]
    return plans


def _pharmacies(rng: Random) -> dict[str, Pharmacy]:
    pharmacies: dict[str, Pharmacy] = {}
    number = 0
    for state, cities in STATES.items():
        names = rng.sample(PHARMACY_NAMES, 2 if state not in ("CA", "TX", "NY", "FL") else 3)
        for name in names:
            number += 1
            pharmacy_id = f"PH-{number:03d}"
            pharmacies[pharmacy_id] = Pharmacy(
                pharmacy_id=pharmacy_id,
                name=name,
                street=f"{rng.randint(10, 2999)} {rng.choice(STREETS)}",
                city=rng.choice(cities),
                state=state,
                phone=f"555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
                hours=rng.choice(PHARMACY_HOURS),
            )
    return pharmacies


def _providers(rng: Random, ids: UniqueDigits) -> dict[str, Provider]:
    last_names = rng.sample(PROVIDER_LAST_NAMES, sum(SPECIALTY_COUNTS.values()))
    states = list(STATES)
    providers: dict[str, Provider] = {}
    for specialty, count in SPECIALTY_COUNTS.items():
        for _ in range(count):
            spoken = ["English", *rng.sample(LANGUAGES, rng.choice([0, 1, 1, 1, 2]))]
            days = sorted(rng.sample(WEEKDAYS, rng.randint(3, 5)), key=WEEKDAYS.index)
            provider_id = f"DR-{ids.digits(4)}"
            providers[provider_id] = Provider(
                provider_id=provider_id,
                first_name=rng.choice(PROVIDER_FIRST_NAMES),
                last_name=last_names.pop(),
                specialty=specialty,  # type: ignore[arg-type]
                licensed_states=sorted(rng.sample(states, rng.choice([1, 2, 2, 3, 3, 4]))),
                languages=spoken,
                schedule={day: list(rng.choice(BLOCKS)) for day in days},  # type: ignore[misc]
            )
    return providers


def _birth(rng: Random, first_year: int, last_year: int) -> str:
    start = date(first_year, 1, 1)
    span = (date(last_year, 12, 31) - start).days
    return (start + timedelta(days=rng.randrange(span))).isoformat()


def _patients(
    rng: Random, ids: UniqueDigits, plans: list[str], pharmacies: dict[str, Pharmacy]
) -> dict[str, Patient]:
    by_state: dict[str, list[str]] = {}
    for pharmacy in pharmacies.values():
        by_state.setdefault(pharmacy.state, []).append(pharmacy.pharmacy_id)
    patients: dict[str, Patient] = {}
    identities: set[tuple[str, str, str]] = set()
    emails: set[str] = set()
    while len(patients) < N_ADULTS:
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        born = _birth(rng, 1946, 2005)
        handle = f"{first}.{last}".lower().replace("'", "")
        email = f"{handle}{rng.randint(10, 99)}@{rng.choice(EMAIL_DOMAINS)}"
        if (first, last, born) in identities or email in emails:
            continue
        identities.add((first, last, born))
        emails.add(email)
        state = rng.choice(list(STATES))
        patient_id = f"PT-{ids.digits(6)}"
        patients[patient_id] = Patient(
            patient_id=patient_id,
            first_name=first,
            last_name=last,
            date_of_birth=born,
            email=email,
            state=state,
            plan_id=rng.choice(plans) if rng.random() < 0.85 else None,
            allergies=sorted(rng.sample(ALLERGIES, rng.choice([0, 0, 1, 1, 2]))),
            conditions=[],
            medications=[],
            preferred_pharmacy_id=rng.choice(by_state[state]),
        )
    guardians = rng.sample(
        [p for p in patients.values() if "1968-01-01" <= p.date_of_birth < "1998-01-01"], N_MINORS * 3 // 4
    )
    minors = 0
    while minors < N_MINORS:
        guardian = guardians[minors % len(guardians)]
        first = rng.choice(CHILD_NAMES)
        born = _birth(rng, 2009, 2023)
        if (
            born > "2008-05-15"
            and (first, guardian.last_name, born) not in identities
            and not any(
                child.first_name == first
                for child in patients.values()
                if child.guardian_id == guardian.patient_id
            )
        ):
            identities.add((first, guardian.last_name, born))
            patient_id = f"PT-{ids.digits(6)}"
            patients[patient_id] = Patient(
                patient_id=patient_id,
                first_name=first,
                last_name=guardian.last_name,
                date_of_birth=born,
                email=None,
                state=guardian.state,
                plan_id=guardian.plan_id,
                allergies=sorted(rng.sample(ALLERGIES, rng.choice([0, 0, 0, 1]))),
                conditions=[],
                medications=[],
                preferred_pharmacy_id=guardian.preferred_pharmacy_id,
                guardian_id=guardian.patient_id,
            )
            minors += 1
    return patients


def _prescriptions(rng: Random, ids: UniqueDigits, world: World) -> None:
    specialists: dict[str, list[Provider]] = {}
    for provider in world.providers.values():
        specialists.setdefault(provider.specialty, []).append(provider)
    state_pharmacies: dict[str, list[str]] = {}
    for pharmacy in world.pharmacies.values():
        state_pharmacies.setdefault(pharmacy.state, []).append(pharmacy.pharmacy_id)
    for patient in world.patients.values():
        minor = patient.guardian_id is not None
        names = CHILD_MEDICATIONS if minor else list(MEDICATIONS)
        count = rng.choice([0, 1, 1, 2]) if minor else rng.choice([0, 1, 2, 2, 3, 3, 4])
        for medication in sorted(rng.sample(names, count), key=names.index):
            controlled, condition, specialty = MEDICATIONS[medication]
            if minor:
                specialty = "pediatrics"
            licensed = [p for p in specialists[specialty] if patient.state in p.licensed_states]
            prescriber = rng.choice(licensed or specialists[specialty])
            pharmacy_id = (
                patient.preferred_pharmacy_id
                if rng.random() < 0.75
                else rng.choice(state_pharmacies[patient.state])
            )
            prescription_id = f"RX-{ids.digits(6)}"
            world.prescriptions[prescription_id] = Prescription(
                prescription_id=prescription_id,
                patient_id=patient.patient_id,
                medication=medication,
                controlled=controlled,
                refills_left=rng.choice([0, 0, 1, 2, 3, 3, 4, 5]),
                pharmacy_id=pharmacy_id,
                prescriber_id=prescriber.provider_id,
            )
            patient.medications.append(medication)
            if condition not in patient.conditions:
                patient.conditions.append(condition)


def _slot_days(provider: Provider, first: date, last: date) -> list[date]:
    days = []
    day = first
    while day <= last:
        if day.weekday() < len(WEEKDAYS) and WEEKDAYS[day.weekday()] in provider.schedule:
            days.append(day)
        day += timedelta(days=1)
    return days


def _appointments(rng: Random, world: World) -> None:
    by_specialty: dict[str, list[Provider]] = {}
    for provider in world.providers.values():
        by_specialty.setdefault(provider.specialty, []).append(provider)
    taken: set[tuple[str, str]] = set()  # (provider id, start) and (patient id, start)
    number = APPOINTMENT_ID_START
    today = NOW.date()  # appointments of today are left out: the clock stands at 08:00
    for patient in world.patients.values():
        minor = patient.guardian_id is not None
        for _ in range(rng.choice([1, 1, 2, 2, 2, 3, 3, 4])):
            if minor:
                specialty = "pediatrics" if rng.random() < 0.8 else "allergy and immunology"
            else:
                needed = [MEDICATIONS[m][2] for m in patient.medications]
                specialty = (
                    rng.choice(needed)
                    if needed and rng.random() < 0.6
                    else rng.choice([s for s in SPECIALTIES if s != "pediatrics"])
                )
            licensed = [p for p in by_specialty[specialty] if patient.state in p.licensed_states]
            if not licensed:
                continue
            provider = rng.choice(licensed)
            future = rng.random() < 0.4
            days = (
                _slot_days(provider, today + timedelta(days=1), LAST_FUTURE_DAY)
                if future
                else _slot_days(provider, FIRST_PAST_DAY, today - timedelta(days=1))
            )
            day = rng.choice(days)
            time = rng.choice(provider.schedule[WEEKDAYS[day.weekday()]])  # type: ignore[index]
            start = f"{day.isoformat()} {time}"
            if (provider.provider_id, start) in taken or (patient.patient_id, start) in taken:
                continue
            taken.update({(provider.provider_id, start), (patient.patient_id, start)})
            status: AppointmentStatus = (
                "scheduled"
                if future and rng.random() < 0.85
                else "cancelled"
                if rng.random() < 0.15
                else "completed"
            )
            if future and status == "completed":
                status = "cancelled"
            visit_type = rng.choice(["video", "video", "phone"])
            plan = world.plans[patient.plan_id] if patient.plan_id else None
            appointment_id = f"APT-{number}"
            number += 1
            world.appointments[appointment_id] = Appointment(
                appointment_id=appointment_id,
                patient_id=patient.patient_id,
                provider_id=provider.provider_id,
                start=start,
                visit_type=visit_type,  # type: ignore[arg-type]
                status=status,
                copay=copay_for_plan(plan, specialty, visit_type),
                cancel_reason=rng.choice(["schedule conflict", "no longer needed", "booked by mistake"])
                if status == "cancelled"
                else None,
            )


def build_world(rng: Random) -> World:
    ids = UniqueDigits(rng)
    plans = _plans()
    pharmacies = _pharmacies(rng)
    providers = _providers(rng, ids)
    patients = _patients(rng, ids, sorted(plans), pharmacies)
    world = World(plans=plans, pharmacies=pharmacies, providers=providers, patients=patients)
    _prescriptions(rng, ids, world)
    _appointments(rng, world)
    return world
