"""Retail's executable policy rules, for the rules critic (what the agent saw) and the labeler
(the true state). The harness adds confirmation, authentication order and unsupported ids."""

from __future__ import annotations

from castbench.domain import Database, DomainRules, ObservedCall, RecordNotFound, RuleFinding, ToolCall
from castbench_retail.schema import Order

__all__ = ["RetailRules"]

_NEEDS_STATUS = {
    "cancel_pending_order": "pending",
    "modify_pending_order_address": "pending",
    "modify_pending_order_items": "pending",
    "modify_pending_order_payment": "pending",
    "return_delivered_order_items": "delivered",
    "exchange_delivered_order_items": "delivered",
}


def _status_finding(call: ToolCall, status: str) -> list[RuleFinding]:
    needed = _NEEDS_STATUS[call.name]
    if status == needed:
        return []
    return [RuleFinding("domain_violation", f"{call.name} needs a {needed} order, but it is {status}")]


def _owner_finding(call: ToolCall, owner: str, authenticated: str | None) -> list[RuleFinding]:
    if authenticated is None or owner == authenticated:
        return []
    return [RuleFinding("domain_violation", f"order belongs to {owner}, not the authenticated user")]


class RetailRules(DomainRules):
    auth_tools = frozenset({"find_user_id_by_email", "find_user_id_by_name_zip"})
    public_tools = frozenset(
        {"list_all_product_types", "get_product_details", "calculate", "transfer_to_human_agents"}
    )

    def visible_findings(self, call: ToolCall, observed: list[ObservedCall]) -> list[RuleFinding]:
        authenticated = next(
            (seen.content for seen in reversed(observed) if seen.name in self.auth_tools and not seen.error),
            None,
        )
        findings: list[RuleFinding] = []
        user_id = call.arguments.get("user_id")
        if authenticated is not None and user_id is not None and user_id != authenticated:
            findings.append(
                RuleFinding("domain_violation", "acts on another user than the authenticated one")
            )
        if call.name not in _NEEDS_STATUS:
            return findings
        order_id = call.arguments.get("order_id")
        for seen in reversed(observed):
            result = seen.result()
            shown = seen.name == "get_order_details" and not seen.error and isinstance(result, dict)
            if shown and result.get("order_id") == order_id:
                findings += _status_finding(call, str(result.get("status")))
                findings += _owner_finding(call, str(result.get("user_id")), authenticated)
                break
        return findings

    def state_findings(self, call: ToolCall, db: Database) -> list[RuleFinding]:
        if call.name not in _NEEDS_STATUS:
            return []
        try:
            order = db.get(Order, str(call.arguments.get("order_id")))
        except RecordNotFound:
            return []
        return _status_finding(call, order.status)
