"""castbench airline: an airline where an agent books, changes and cancels reservations, adds bags,
corrects passengers and issues compensation.

In the spirit of τ-Bench airline, with castbench's own generated data, tasks and policy wording
(`python -m castbench_airline.generate --seed 20260515` rebuilds data/ and tasks/).
"""

from __future__ import annotations

from pathlib import Path

from castbench.domain import Domain, Toolkit
from castbench_airline.rules import AirlineRules
from castbench_airline.schema import Airport, Flight, Reservation, User
from castbench_airline.timeline import NOW
from castbench_airline.tools import TOOLS

__all__ = ["NOW", "domain"]

TOOLKIT = Toolkit(TOOLS)
domain = Domain(
    name="airline",
    version="3-0",
    root=Path(__file__).parent,
    records=[Airport, Flight, User, Reservation],
    toolkit=TOOLKIT,
    now=NOW,
    description=(
        "An airline: verify the customer, then book, change or cancel reservations, change cabins, "
        "add bags, correct passengers and issue compensation certificates."
    ),
    rules=AirlineRules(TOOLKIT),
)
