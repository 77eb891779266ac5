"""Retail's executable policy rules, for the rules critic (what the agent saw) and the labeler
(the true state). The harness adds confirmation, authentication order and unsupported ids.

Which tools authenticate, which need no authentication and which order status a write needs
are the tools' own metadata (`authenticates`, `public`, `requires`): a renamed tool keeps them.
"""

from __future__ import annotations

from castbench.domain import (
    Database,
    DomainRules,
    Facts,
    ObservedCall,
    ObservedFacts,
    RuleFinding,
    ToolCall,
    Toolkit,
    TrueFacts,
)
from castbench_retail.schema import Order
from castbench_retail.vocabulary import REASON_SYNONYMS

__all__ = ["RetailRules"]


def _status_finding(call: ToolCall, needed: str, status: str) -> list[RuleFinding]:
    if status == needed:
        return []
    return [RuleFinding("domain_violation", f"{call.name} needs a {needed} order, but it is {status}")]


def _owner_finding(owner: str, authenticated: str | None) -> list[RuleFinding]:
    if authenticated is None or owner == authenticated:
        return []
    return [RuleFinding("domain_violation", f"order belongs to {owner}, not the authenticated user")]


class RetailRules(DomainRules):
    reason_synonyms = REASON_SYNONYMS

    def __init__(self, toolkit: Toolkit) -> None:
        super().__init__(toolkit)
        self.tools = toolkit

    def _needed_status(self, call: ToolCall) -> str | None:
        """The order status the write needs (its tool's `requires`), if it acts on an order."""
        tool = self.tools.get(call.name)
        if tool is None or tool.returns is not Order or "status" not in tool.requires:
            return None
        return str(tool.requires["status"])

    def _order_findings(self, call: ToolCall, facts: Facts, authenticated: str | None) -> list[RuleFinding]:
        needed = self._needed_status(call)
        if needed is None:
            return []
        order = facts.row(Order, call.arguments.get(Order.key_field))
        if order is None:
            return []
        return [
            *_status_finding(call, needed, str(order.get("status"))),
            *_owner_finding(str(order.get("user_id")), authenticated),
        ]

    def visible_findings(self, call: ToolCall, observed: list[ObservedCall]) -> list[RuleFinding]:
        facts = ObservedFacts(self.tools, observed, from_writes=False)
        authenticated = facts.authentications[-1].content if facts.authentications else None
        findings: list[RuleFinding] = []
        user_id = call.arguments.get("user_id")
        if authenticated is not None and user_id is not None and user_id != authenticated:
            findings.append(
                RuleFinding("domain_violation", "acts on another user than the authenticated one")
            )
        return findings + self._order_findings(call, facts, authenticated)

    def state_findings(self, call: ToolCall, db: Database) -> list[RuleFinding]:
        return self._order_findings(call, TrueFacts(db), None)
