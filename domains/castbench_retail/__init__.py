"""castbench retail: an online store where an agent cancels, modifies, returns and exchanges orders.

In the spirit of τ-Bench retail, with castbench's own generated data, tasks and policy wording
(`python -m castbench_retail.generate --seed 20261129` rebuilds data/ and tasks/).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from castbench.domain import Domain, Toolkit
from castbench_retail.rules import RetailRules
from castbench_retail.schema import Order, Product, User
from castbench_retail.tools import TOOLS

__all__ = ["NOW", "domain"]

NOW = datetime(2026, 5, 15, 10, 0, tzinfo=UTC)

TOOLKIT = Toolkit(TOOLS)
domain = Domain(
    name="retail",
    version="3-0",
    root=Path(__file__).parent,
    records=[User, Product, Order],
    toolkit=TOOLKIT,
    now=NOW,
    rules=RetailRules(TOOLKIT),
    description=(
        "An online store: authenticate the customer, then cancel or modify pending orders, "
        "return or exchange delivered items, update addresses and payment methods."
    ),
)
