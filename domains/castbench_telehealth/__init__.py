"""castbench telehealth: a telehealth service where an agent books, moves and cancels visits,
refills prescriptions, changes pharmacies, quotes copays and escalates emergencies.

In the spirit of τ-Trait telehealth, with castbench's own generated data, tasks and policy
wording (`python -m castbench_telehealth.generate --seed 20260515` rebuilds data/ and tasks/).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from castbench.domain import Domain, Toolkit
from castbench_telehealth.rules import TelehealthRules
from castbench_telehealth.schema import (
    Appointment,
    Escalation,
    InsurancePlan,
    Patient,
    Pharmacy,
    Prescription,
    Provider,
)
from castbench_telehealth.tools import TOOLS

__all__ = ["NOW", "domain"]

NOW = datetime(2026, 5, 15, 8, 0, tzinfo=UTC)

TOOLKIT = Toolkit(TOOLS)
domain = Domain(
    name="telehealth",
    version="3-0",
    root=Path(__file__).parent,
    records=[InsurancePlan, Pharmacy, Provider, Patient, Appointment, Prescription, Escalation],
    toolkit=TOOLKIT,
    now=NOW,
    description=(
        "A telehealth service: verify the patient (or a guardian for a minor), then book, "
        "reschedule or cancel visits with licensed providers, refill prescriptions, change "
        "pharmacies, quote copays and escalate emergencies."
    ),
    rules=TelehealthRules(TOOLKIT),
)
