"""Task families: each picks entities that meet its preconditions, writes the patient's scenario
and derives the ground truth with a reference solver that follows policy.md.

A family returns a `Draft`, or `None` when the pool holds no fitting entity this draw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from random import Random
from typing import TypeVar

from castbench.domain import Database, DraftBase, Fact, Families, Rival, ToolCall, confirm_answer, mention
from castbench_telehealth.schema import Appointment, Patient, Pharmacy, Prescription, Provider, VisitType
from castbench_telehealth.tools import available_slots, copay_for
from castbench_telehealth.vocabulary import EMERGENCIES, LANGUAGES, PERSONAS
from castbench_telehealth.world import World

__all__ = ["FAMILIES", "Draft", "Pool", "equivalents"]

E = TypeVar("E", Appointment, Prescription, Provider)

SEARCH_DAYS = 21
"""Requested visits fall within this many days from today."""


@dataclass(kw_only=True)
class Draft(DraftBase):
    speaker: Patient
    """Who talks to the agent: the patient, or the guardian of a minor."""

    def instructions(self) -> str:
        if self.declined_actions:
            answer = confirm_answer(False)
        elif self.outcome in ("change", "refuse"):
            answer = confirm_answer(True, change="a change")
        else:
            answer = "Nothing needs to change on your record; if the agent proposes a change, say no."
        return self.brief(
            f"{self.speaker.first_name} {self.speaker.last_name}",
            "a patient of a telehealth service",
            unknown="any patient, provider, appointment, prescription or pharmacy ids",
            answer=answer,
        )


class Pool:
    """The patients one split draws from, the seed state to reason on, and what was used."""

    def __init__(self, world: World, patients: list[Patient], db: Database, rng: Random) -> None:
        self.world = world
        self.patients = patients
        self.db = db
        self.rng = rng
        self.used: set[str] = set()
        self._appointments: dict[str, list[Appointment]] = {}
        for appointment in sorted(world.appointments.values(), key=lambda a: a.appointment_id):
            self._appointments.setdefault(appointment.patient_id, []).append(appointment)
        self._prescriptions: dict[str, list[Prescription]] = {}
        for prescription in sorted(world.prescriptions.values(), key=lambda p: p.prescription_id):
            self._prescriptions.setdefault(prescription.patient_id, []).append(prescription)

    def pick(self, candidates: list[tuple[Patient, E]]) -> tuple[Patient, E] | None:
        """A random candidate, preferring patients and entities not used yet in this split."""
        if not candidates:
            return None
        fresh = [c for c in candidates if c[0].patient_id not in self.used and _key(c[1]) not in self.used]
        patient, entity = self.rng.choice(fresh or candidates)
        self.used.update({patient.patient_id, _key(entity)})
        return patient, entity

    def adults(self) -> list[Patient]:
        return [p for p in self.patients if p.guardian_id is None]

    def appointments(self, patient: Patient) -> list[Appointment]:
        return self._appointments.get(patient.patient_id, [])

    def prescriptions(self, patient: Patient) -> list[Prescription]:
        return self._prescriptions.get(patient.patient_id, [])

    def provider(self, provider_id: str) -> Provider:
        return self.world.providers[provider_id]


def _key(entity: object) -> str:
    for name in ("appointment_id", "prescription_id", "provider_id", "patient_id", "pharmacy_id"):
        if hasattr(entity, name):
            return str(getattr(entity, name))
    return str(entity)


# -- wording ---------------------------------------------------------------------------------
def spoken_date(day: date) -> str:
    return f"{day.strftime('%A')}, {day.strftime('%B')} {day.day}, {day.year}"


def provider_name(provider: Provider) -> str:
    return f"Dr. {provider.first_name} {provider.last_name}"


def appointment_phrase(pool: Pool, appointment: Appointment) -> str:
    provider = pool.provider(appointment.provider_id)
    day = date.fromisoformat(appointment.start[:10])
    when = f"{spoken_date(day)} at {appointment.start[11:]} UTC"
    return f"my {appointment.visit_type} visit with {provider_name(provider)} on {when}"


def a_or_an(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


SPECIALIST_WORDS = {
    "primary care": "primary care doctor",
    "pediatrics": "pediatrician",
    "dermatology": "dermatologist",
    "cardiology": "cardiologist",
    "endocrinology": "endocrinologist",
    "psychiatry": "psychiatrist",
    "gastroenterology": "gastroenterologist",
    "allergy and immunology": "allergist",
}


# -- facts -----------------------------------------------------------------------------------
def _by_name_dob(patient: Patient) -> ToolCall:
    return ToolCall(
        name="find_patient_by_name_dob",
        arguments={
            "first_name": patient.first_name,
            "last_name": patient.last_name,
            "date_of_birth": patient.date_of_birth,
        },
    )


def equivalents(world: World, call: ToolCall) -> list[ToolCall]:
    """The same patient found the other way (by email, or by name and date of birth)."""
    for patient in world.patients.values():
        ways = [_by_name_dob(patient)]
        if patient.email is not None:
            ways.append(ToolCall(name="find_patient_by_email", arguments={"email": patient.email}))
        if call in ways:
            return ways
    return []


def authenticate(rng: Random, patient: Patient) -> tuple[list[Fact], ToolCall]:
    """Half of the tasks verify by email, half by name and date of birth."""
    if patient.email is not None and rng.random() < 0.5:
        fact = Fact(
            name="email", value=patient.email, keywords=["email"], statement=f"My email is {patient.email}."
        )
        return [fact], ToolCall(name="find_patient_by_email", arguments={"email": patient.email})
    born = date.fromisoformat(patient.date_of_birth)
    facts = [
        Fact(
            name="first_name",
            value=patient.first_name,
            keywords=["first name", "full name", "your name"],
            statement=f"My first name is {patient.first_name}.",
        ),
        Fact(
            name="last_name",
            value=patient.last_name,
            keywords=["last name", "surname", "full name", "your name"],
            statement=f"My last name is {patient.last_name}.",
        ),
        Fact(
            name="date_of_birth",
            value=patient.date_of_birth,
            keywords=["date of birth", "birth", "born", "dob"],
            statement=f"I was born on {born.strftime('%B')} {born.day}, {born.year}.",
        ),
    ]
    return facts, _by_name_dob(patient)


def date_fact(day: date, new: bool = False) -> Fact:
    return Fact(
        name="new_date" if new else "preferred_date",
        value=day.isoformat(),
        keywords=[
            "new date" if new else "preferred date",
            "which date",
            "what date",
            "which day",
            "what day",
        ],
        statement=f"{'Move it to' if new else 'I would like'} {spoken_date(day)}.",
    )


def time_fact(time: str, new: bool = False) -> Fact:
    return Fact(
        name="new_time" if new else "preferred_time",
        value=time,
        keywords=["new time" if new else "preferred time", "what time", "which time", "time slot"],
        statement=f"At {time} UTC, please.",
    )


def visit_type_fact(visit_type: str) -> Fact:
    return Fact(
        name="visit_type",
        value=visit_type,
        keywords=["visit type", "video or phone", "phone or video", "type of visit"],
        statement=f"A {visit_type} visit, please.",
    )


def language_fact(language: str | None) -> Fact:
    statement = (
        f"I'd like a provider who speaks {language}."
        if language
        else "Any language is fine; English is okay."
    )
    return Fact(name="language", value=language or "any", keywords=["language", "speak"], statement=statement)


def reason_fact(reason: str) -> Fact:
    statement = {
        "schedule conflict": "Something else came up at that time; it's a schedule conflict.",
        "no longer needed": "I don't need the visit anymore.",
        "booked by mistake": "I booked it by mistake.",
    }[reason]
    return Fact(name="cancel_reason", value=reason, keywords=["reason", "why"], statement=statement)


def pharmacy_fact(pharmacy: Pharmacy) -> Fact:
    return Fact(
        name="new_pharmacy",
        value=pharmacy.pharmacy_id,
        keywords=["new pharmacy", "which pharmacy", "pharmacy name", "what pharmacy"],
        statement=f"The pharmacy is {pharmacy.name} on {pharmacy.street} in {pharmacy.city}.",
    )


def read(name: str, **arguments: object) -> ToolCall:
    return ToolCall(
        name=name, arguments={key: value for key, value in arguments.items() if value is not None}
    )


def details(patient: Patient) -> ToolCall:
    return read("get_patient_details", patient_id=patient.patient_id)


def _start(pool: Pool, speaker: Patient) -> tuple[list[Fact], list[ToolCall], str]:
    facts, call = authenticate(pool.rng, speaker)
    return facts, [call], pool.rng.choice(PERSONAS)


# -- reference solver pieces -----------------------------------------------------------------
def licensed(pool: Pool, specialty: str, state: str) -> list[Provider]:
    return sorted(
        (p for p in pool.world.providers.values() if p.specialty == specialty and state in p.licensed_states),
        key=lambda p: p.provider_id,
    )


def unique_choice(pool: Pool, candidates: list[Provider]) -> tuple[Provider, str | None] | None:
    """A provider the patient can single out: the only licensed one, or the only licensed one
    who speaks a language the patient asks for."""
    if len(candidates) == 1:
        return candidates[0], None
    options = []
    for language in LANGUAGES:
        speakers = [p for p in candidates if language in p.languages]
        if len(speakers) == 1:
            options.append((speakers[0], language))
    return pool.rng.choice(options) if options else None


def free_slot(pool: Pool, patient: Patient, provider: Provider, not_at: str = "") -> str | None:
    """A free slot of the provider in the coming weeks that the patient has no appointment at."""
    busy = {a.start for a in pool.appointments(patient) if a.status == "scheduled"}
    today = pool.db.now.date()
    days = [today + timedelta(days=offset) for offset in range(1, SEARCH_DAYS + 1)]
    pool.rng.shuffle(days)
    for day in days:
        slots = [s for s in available_slots(pool.db, provider, day) if s not in busy and s != not_at]
        if slots:
            return pool.rng.choice(slots)
    return None


def upcoming(pool: Pool, patient: Patient) -> list[Appointment]:
    now = pool.db.now.strftime("%Y-%m-%d %H:%M")
    return [a for a in pool.appointments(patient) if a.status == "scheduled" and a.start > now]


# -- the families ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Visit:
    """A visit to book for a patient, found for whoever books it (the patient or their guardian)."""

    patient: Patient
    specialty: str
    provider: Provider
    language: str | None
    """The language that singles the provider out, if the patient must ask for one."""
    slot: str
    visit_type: VisitType

    @property
    def day(self) -> date:
        return date.fromisoformat(self.slot[:10])

    def wording(self) -> str:
        """How the brief describes it: 'a video visit with a dermatology provider ... (that is Dr. X)'."""
        return (
            f"a {self.visit_type} visit with a {self.specialty} provider licensed in your state"
            + (f" who speaks {self.language}" if self.language else "")
            + f", on {spoken_date(self.day)} at {self.slot[11:]} UTC (that is {provider_name(self.provider)})"
        )

    def facts(self) -> list[Fact]:
        return [
            language_fact(self.language),
            date_fact(self.day),
            time_fact(self.slot[11:]),
            visit_type_fact(self.visit_type),
        ]

    def calls(self) -> list[ToolCall]:
        """Find the provider, see the slot is free, book it."""
        return [
            read(
                "search_providers", specialty=self.specialty, state=self.patient.state, language=self.language
            ),
            read("list_available_slots", provider_id=self.provider.provider_id, date=self.day.isoformat()),
            ToolCall(
                name="book_appointment",
                arguments={
                    "patient_id": self.patient.patient_id,
                    "provider_id": self.provider.provider_id,
                    "start": self.slot,
                    "visit_type": self.visit_type,
                },
            ),
        ]


def _booking(pool: Pool, speaker: Patient, patient: Patient, specialty: str) -> _Visit | None:
    """A visit `speaker` can book for `patient`: a provider they can single out and a free slot.
    Both are then used in this split."""
    choice = unique_choice(pool, licensed(pool, specialty, patient.state))
    if choice is None:
        return None
    provider, language = choice
    slot = free_slot(pool, patient, provider)
    if slot is None:
        return None
    pool.used.update({speaker.patient_id, patient.patient_id})
    visit_type: VisitType = pool.rng.choice(["video", "video", "phone"])
    return _Visit(patient, specialty, provider, language, slot, visit_type)


def book_visit(pool: Pool) -> Draft | None:
    patients = [p for p in pool.adults() if p.patient_id not in pool.used]
    if not patients:
        return None
    patient = pool.rng.choice(patients)
    specialty = pool.rng.choice([s for s in SPECIALIST_WORDS if s != "pediatrics"])
    visit = _booking(pool, patient, patient, specialty)
    if visit is None:
        return None
    facts, actions, persona = _start(pool, patient)
    return Draft(
        family="book_visit",
        outcome="change",
        speaker=patient,
        request=f"Hi, I'd like to book an appointment with {a_or_an(SPECIALIST_WORDS[specialty])}.",
        goal=f"book {visit.wording()}.",
        facts=[*facts, *visit.facts()],
        actions=[*actions, details(patient), *visit.calls()],
        persona=persona,
    )


def guardian_books_minor(pool: Pool) -> Draft | None:
    minors = [p for p in pool.patients if p.guardian_id is not None and p.patient_id not in pool.used]
    if not minors:
        return None
    child = pool.rng.choice(minors)
    guardian = pool.world.patients[child.guardian_id]  # type: ignore[index]
    specialty = "pediatrics" if pool.rng.random() < 0.75 else "allergy and immunology"
    visit = _booking(pool, guardian, child, specialty)
    if visit is None:
        return None
    facts, actions, persona = _start(pool, guardian)
    return Draft(
        family="guardian_books_minor",
        outcome="change",
        speaker=guardian,
        request=f"Hello, I need to book {a_or_an(SPECIALIST_WORDS[specialty])} visit for my child, "
        f"{child.first_name}.",
        goal=f"as {child.first_name}'s parent and guardian, book {child.first_name} {child.last_name} "
        f"(born {child.date_of_birth}) {visit.wording()}. You verify your own identity, not your child's.",
        facts=[*facts, *visit.facts()],
        actions=[*actions, details(guardian), details(child), *visit.calls()],
        notes=[
            f"The visit is for {child.first_name}, not for you; say so if the agent seems to book it for you."
        ],
        persona=persona,
    )


def reschedule_visit(pool: Pool) -> Draft | None:
    candidates = []
    for patient in pool.adults():
        for appointment in upcoming(pool, patient):
            candidates.append((patient, appointment))
    picked = pool.pick(candidates)
    if picked is None:
        return None
    patient, appointment = picked
    provider = pool.provider(appointment.provider_id)
    slot = free_slot(pool, patient, provider, not_at=appointment.start)
    if slot is None:
        return None
    day = date.fromisoformat(slot[:10])
    facts, actions, persona = _start(pool, patient)
    phrase = appointment_phrase(pool, appointment)
    return Draft(
        family="reschedule_visit",
        outcome="change",
        speaker=patient,
        request=f"Hi, I need to move {phrase}.",
        goal=f"move {phrase} to {spoken_date(day)} at {slot[11:]} UTC, same provider and visit type.",
        facts=[*facts, date_fact(day, new=True), time_fact(slot[11:], new=True)],
        actions=[
            *actions,
            details(patient),
            read("list_available_slots", provider_id=provider.provider_id, date=day.isoformat()),
            ToolCall(
                name="reschedule_appointment",
                arguments={"appointment_id": appointment.appointment_id, "new_start": slot},
            ),
        ],
        persona=persona,
    )


def _cancel_candidates(pool: Pool) -> list[tuple[Patient, Appointment]]:
    return [(patient, appointment) for patient in pool.adults() for appointment in upcoming(pool, patient)]


def cancel_visit(pool: Pool) -> Draft | None:
    picked = pool.pick(_cancel_candidates(pool))
    if picked is None:
        return None
    patient, appointment = picked
    reason = pool.rng.choice(["schedule conflict", "no longer needed", "booked by mistake"])
    facts, actions, persona = _start(pool, patient)
    phrase = appointment_phrase(pool, appointment)
    return Draft(
        family="cancel_visit",
        outcome="change",
        speaker=patient,
        request=f"Hello, I want to cancel {phrase}.",
        goal=f"cancel {phrase}.",
        facts=[*facts, reason_fact(reason)],
        actions=[
            *actions,
            details(patient),
            ToolCall(
                name="cancel_appointment",
                arguments={"appointment_id": appointment.appointment_id, "reason": reason},
            ),
        ],
        persona=persona,
    )


def _prescription_candidates(
    pool: Pool, test: Callable[[Prescription], bool]
) -> list[tuple[Patient, Prescription]]:
    return [
        (patient, prescription)
        for patient in pool.adults()
        for prescription in pool.prescriptions(patient)
        if test(prescription)
    ]


def refill_allowed(pool: Pool) -> Draft | None:
    picked = pool.pick(_prescription_candidates(pool, lambda rx: not rx.controlled and rx.refills_left > 0))
    if picked is None:
        return None
    patient, prescription = picked
    facts, actions, persona = _start(pool, patient)
    return Draft(
        family="refill_allowed",
        outcome="change",
        speaker=patient,
        request=f"Hi, I'm running low on my {prescription.medication}. Can I get a refill?",
        goal=f"get a refill of your {prescription.medication} sent to the pharmacy it usually goes to.",
        facts=facts,
        actions=[
            *actions,
            details(patient),
            ToolCall(name="request_refill", arguments={"prescription_id": prescription.prescription_id}),
        ],
        persona=persona,
    )


LICENSING = ["licensed", "licence", "license"]


def refuse_refill_controlled(pool: Pool) -> Draft | None:
    picked = pool.pick(_prescription_candidates(pool, lambda rx: rx.controlled and rx.refills_left > 0))
    if picked is None:
        return None
    patient, prescription = picked
    facts, actions, persona = _start(pool, patient)
    return Draft(
        family="refuse_refill_controlled",
        outcome="refuse",
        speaker=patient,
        request=f"Hi, I need a refill of my {prescription.medication}, please. I'm almost out.",
        goal=f"get a refill of your {prescription.medication}; your record still shows refills left.",
        facts=facts,
        actions=[*actions, details(patient)],
        notes=[
            "If the agent asks why you need it, say you just ran low. If the agent explains it cannot refill "
            "this medicine and that you should contact your prescriber, accept it; you want nothing else."
        ],
        reasons=[mention("controlled")],
        persona=persona,
    )


def refuse_refill_none_left(pool: Pool) -> Draft | None:
    picked = pool.pick(_prescription_candidates(pool, lambda rx: not rx.controlled and rx.refills_left == 0))
    if picked is None:
        return None
    patient, prescription = picked
    facts, actions, persona = _start(pool, patient)
    return Draft(
        family="refuse_refill_none_left",
        outcome="refuse",
        speaker=patient,
        request=f"Hello, could you send another refill of my {prescription.medication} to my pharmacy?",
        goal=f"get a refill of your {prescription.medication}.",
        facts=facts,
        actions=[*actions, details(patient)],
        notes=[
            "If the agent explains there are no refills left and a visit is needed to renew it, accept it; "
            "do not book a visit in this conversation."
        ],
        reasons=[mention("no refills", "0 refills", "zero refills", "none left")],
        allowed_claims=LICENSING,  # the renewal visit is with a provider licensed in their state
        persona=persona,
    )


def _other_pharmacies(pool: Pool, patient: Patient, current: str) -> list[Pharmacy]:
    return sorted(
        (
            ph
            for ph in pool.world.pharmacies.values()
            if ph.state == patient.state and ph.pharmacy_id != current
        ),
        key=lambda ph: ph.pharmacy_id,
    )


def change_pharmacy(pool: Pool) -> Draft | None:
    if pool.rng.random() < 0.5:
        picked = pool.pick(_prescription_candidates(pool, lambda rx: not rx.controlled))
        if picked is None:
            return None
        patient, prescription = picked
        pharmacy = pool.rng.choice(_other_pharmacies(pool, patient, prescription.pharmacy_id))
        write = ToolCall(
            name="transfer_prescription",
            arguments={"prescription_id": prescription.prescription_id, "pharmacy_id": pharmacy.pharmacy_id},
        )
        medication = prescription.medication
        request = f"Hi, I'd like my {medication} prescription sent to a different pharmacy from now on."
        goal = (
            f"have your {prescription.medication} prescription sent to {pharmacy.name} in {pharmacy.city}. "
            "Only this prescription should move; your preferred pharmacy stays as it is."
        )
    else:
        patient = pool.rng.choice(
            [p for p in pool.adults() if p.patient_id not in pool.used] or pool.adults()
        )
        pool.used.add(patient.patient_id)
        pharmacy = pool.rng.choice(_other_pharmacies(pool, patient, patient.preferred_pharmacy_id))
        write = ToolCall(
            name="update_preferred_pharmacy",
            arguments={"patient_id": patient.patient_id, "pharmacy_id": pharmacy.pharmacy_id},
        )
        request = "Hello, I want to change my preferred pharmacy for new prescriptions."
        goal = (
            f"make {pharmacy.name} in {pharmacy.city} your preferred pharmacy. Your existing prescriptions "
            "stay where they are."
        )
    facts, actions, persona = _start(pool, patient)
    return Draft(
        family="change_pharmacy",
        outcome="change",
        speaker=patient,
        request=request,
        goal=goal,
        facts=[*facts, pharmacy_fact(pharmacy)],
        actions=[
            *actions,
            details(patient),
            read("search_pharmacies", state=patient.state, city=pharmacy.city),
            write,
        ],
        persona=persona,
    )


def emergency_escalation(pool: Pool) -> Draft | None:
    patients = [p for p in pool.adults() if p.patient_id not in pool.used]
    if not patients:
        return None
    patient = pool.rng.choice(patients)
    pool.used.add(patient.patient_id)
    symptom = pool.rng.choice(sorted(EMERGENCIES))
    description = pool.rng.choice(EMERGENCIES[symptom])
    facts, actions, persona = _start(pool, patient)
    return Draft(
        family="emergency_escalation",
        outcome="change",
        speaker=patient,
        request=f"{description} Can I see a doctor online today?",
        goal=f"get help right now: {description}",
        facts=facts,
        actions=[
            *actions,
            ToolCall(
                name="escalate_to_clinician",
                arguments={"patient_id": patient.patient_id, "symptom": symptom, "urgency": "emergency"},
            ),
        ],
        required_outputs=["911"],
        notes=[
            "You are frightened. If the agent tells you to call 911, say you will, and agree when it offers "
            "to have a clinician follow up. Do not describe other symptoms."
        ],
        persona=persona,
    )


def refuse_unlicensed_provider(pool: Pool) -> Draft | None:
    candidates = [
        (patient, provider)
        for patient in pool.adults()
        for provider in pool.world.providers.values()
        if provider.specialty != "pediatrics" and patient.state not in provider.licensed_states
    ]
    picked = pool.pick(candidates)
    if picked is None:
        return None
    patient, provider = picked
    visit_type = pool.rng.choice(["video", "phone"])
    facts, actions, persona = _start(pool, patient)
    return Draft(
        family="refuse_unlicensed_provider",
        outcome="refuse",
        speaker=patient,
        request=f"Hi, I'd like to book a {visit_type} visit with {provider_name(provider)}, the "
        f"{SPECIALIST_WORDS[provider.specialty]}. A friend recommended this doctor.",
        goal=f"book a {visit_type} visit with {provider_name(provider)} ({provider.specialty}).",
        facts=facts,
        actions=[
            *actions,
            details(patient),
            read("search_providers", specialty=provider.specialty, last_name=provider.last_name),
        ],
        notes=[
            f"You only want {provider_name(provider)}. If the agent explains that this provider cannot "
            "see you "
            "because of state licensing, accept it and decline any other provider."
        ],
        reasons=[mention(*LICENSING)],
        persona=persona,
    )


def _other_copays(pool: Pool, patient: Patient, copay: str) -> list[str]:
    copays = {
        f"${copay_for(pool.db, patient, specialty, visit_type):.2f}"
        for specialty in sorted(SPECIALIST_WORDS)
        for visit_type in ("video", "phone")
    }
    return sorted(copays - {copay})


def coverage_lookup(pool: Pool) -> Draft | None:
    patients = [p for p in pool.adults() if p.patient_id not in pool.used]
    if not patients:
        return None
    patient = pool.rng.choice(patients)
    pool.used.add(patient.patient_id)
    specialty = pool.rng.choice(sorted(SPECIALIST_WORDS))
    if specialty == "pediatrics":
        specialty = "primary care"
    visit_type = pool.rng.choice(["video", "phone"])
    copay = f"${copay_for(pool.db, patient, specialty, visit_type):.2f}"
    facts, actions, persona = _start(pool, patient)
    return Draft(
        family="coverage_lookup",
        outcome="no_change",
        speaker=patient,
        request=f"Hi, how much would a {visit_type} visit with {a_or_an(SPECIALIST_WORDS[specialty])} "
        "cost me?",
        goal=f"learn your copay for a {visit_type} visit in {specialty} (it is {copay}). You do not want "
        "to book yet.",
        facts=facts,
        actions=[
            *actions,
            read("check_coverage", patient_id=patient.patient_id, specialty=specialty, visit_type=visit_type),
        ],
        required_outputs=[copay],
        # the copay of every other visit: a reply listing them all has not said which is asked
        rivals=[Rival(output=copay, others=others)]
        if (others := _other_copays(pool, patient, copay))
        else [],
        persona=persona,
    )


def declined_confirmation(pool: Pool) -> Draft | None:
    if pool.rng.random() < 0.5:
        picked = pool.pick(_cancel_candidates(pool))
        if picked is None:
            return None
        patient, appointment = picked
        reason = pool.rng.choice(["schedule conflict", "no longer needed", "booked by mistake"])
        phrase = appointment_phrase(pool, appointment)
        extra = [reason_fact(reason)]
        request = f"Hi, I'm thinking about cancelling {phrase}."
        goal = f"consider cancelling {phrase}, but keep it in the end."
        declined = ToolCall(
            name="cancel_appointment",
            arguments={"appointment_id": appointment.appointment_id, "reason": reason},
        )
        offer = [mention(appointment.appointment_id), mention("cancel")]
        rivals = [a.appointment_id for a in pool.appointments(patient) if a is not appointment]
    else:
        picked_rx = pool.pick(
            _prescription_candidates(pool, lambda rx: not rx.controlled and rx.refills_left > 0)
        )
        if picked_rx is None:
            return None
        patient, prescription = picked_rx
        extra = []
        request = f"Hello, I might need a refill of my {prescription.medication}."
        goal = (
            f"consider a refill of your {prescription.medication}, but decide you still have enough "
            "and decline."
        )
        declined = ToolCall(
            name="request_refill", arguments={"prescription_id": prescription.prescription_id}
        )
        offer = [mention(prescription.prescription_id, prescription.medication), mention("refill")]
        rivals = [
            word
            for rx in pool.prescriptions(patient)
            if rx is not prescription and rx.medication != prescription.medication
            for word in (rx.prescription_id, rx.medication)
        ]
    facts, actions, persona = _start(pool, patient)
    return Draft(
        family="declined_confirmation",
        outcome="no_change",
        speaker=patient,
        request=request,
        goal=goal,
        facts=[*facts, *extra],
        actions=[*actions, details(patient)],
        declined_actions=[declined],
        confirm=False,
        offer=offer,
        offer_rivals=rivals,
        persona=persona,
    )


FAMILIES: Families[Pool, Draft] = {
    # family: (builder, test count, train count)
    "book_visit": (book_visit, 5, 18),
    "reschedule_visit": (reschedule_visit, 4, 15),
    "cancel_visit": (cancel_visit, 4, 14),
    "refill_allowed": (refill_allowed, 4, 14),
    "refuse_refill_controlled": (refuse_refill_controlled, 3, 11),
    "refuse_refill_none_left": (refuse_refill_none_left, 3, 11),
    "change_pharmacy": (change_pharmacy, 4, 14),
    "guardian_books_minor": (guardian_books_minor, 4, 14),
    "emergency_escalation": (emergency_escalation, 3, 12),
    "refuse_unlicensed_provider": (refuse_unlicensed_provider, 3, 11),
    "coverage_lookup": (coverage_lookup, 4, 14),
    "declined_confirmation": (declined_confirmation, 3, 12),
}
