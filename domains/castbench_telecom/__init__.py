"""castbench telecom: a mobile carrier; the agent fixes lines and bills, the customer fixes their phone.

In the spirit of τ²-bench telecom, with castbench's own data, tasks and policy wording. Two
parties act on the world: the agent through the back-end tools (`tools.py`), the customer
through their phone (`device.py`, the domain's user toolkit). Customers are identified by a
phone number on their account and their date of birth, or by customer id and full name.
(`python -m castbench_telecom.generate --seed 20260515` rebuilds data/ and tasks/.)
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from castbench.domain import Domain, Toolkit
from castbench_telecom.device import USER_TOOLS
from castbench_telecom.rules import TelecomRules
from castbench_telecom.schema import Bill, Customer, Device, Line, Plan, Ticket
from castbench_telecom.tools import TOOLS

__all__ = ["NOW", "domain"]

NOW = datetime(2026, 5, 15, 9, 0, tzinfo=UTC)

TOOLKIT = Toolkit(TOOLS)
domain = Domain(
    name="telecom",
    version="3-0",
    root=Path(__file__).parent,
    records=[Plan, Customer, Line, Device, Bill, Ticket],
    toolkit=TOOLKIT,
    user_toolkit=Toolkit(USER_TOOLS),
    now=NOW,
    description=(
        "A mobile carrier: authenticate the customer, troubleshoot service and data with them "
        "(they change their phone's settings), change plans, add data, manage roaming, "
        "suspend and resume lines, pay and credit bills."
    ),
    rules=TelecomRules(TOOLKIT),
)
