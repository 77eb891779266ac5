"""Executable rules for the packs of published τ-style benchmarks (`castbench_tau`, `castbench_tau2`),
derived from what their packages give (no rule written per task).

τ ships its policy as prose (the wiki) and, for retail, a short `RULES` list; the labeler and the
rules critic need checks they can run. What is derived, and from what:

- authentication (τ retail's rule "first confirm the user id by email or name+zip", telehealth's
  "always authenticate", telecom's "verify identity"): the identity look-ups are the tools the
  pack marks `Tool.authenticates` (τ's `find_*` tools), whatever they are named here; a tool
  needs an earlier successful look-up unless it is public. Airline has no look-up tool (the user
  gives their id), so nothing needs one there;
- public tools: those the pack marks `Tool.public`, and look-ups whose arguments name no
  customer-owned row (a product, a provider, an airport list), plus `calculate`, `think` and the
  transfer tools;
- free-text tools: `calculate` and `think` read and change no data; their arguments are the
  agent's own arithmetic and notes, which the rules critic does not ask to be supported;
- confirmation before a write (every τ wiki): castbench's own check, for the tools
  the pack's toolkit counts as writes;
- status preconditions spelled in a tool's name: a write tool called on the row its `<x>_id`
  names must find that row's `status` equal to the status word in the tool's name
  (`cancel_pending_order` needs a `pending` order, `return_delivered_order_items` a `delivered`
  one) — on what a tool result showed (rules critic) or on the true state (labeler).

Not covered (prose only, see the pack's README): airline's fare, baggage, insurance, 24-hour and
basic-economy rules; retail's one-exchange/one-modification-per-order and same-product-type rules
and payment-method constraints; telecom's and telehealth's clinical, billing and scheduling rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from castbench._domain.database import Database
from castbench._domain.rules import DomainRules, ObservedCall, RuleFinding
from castbench._domain.task import ToolCall
from castbench._domain.tools import Toolkit

__all__ = ["FREE_TEXT_TOOLS", "DerivedRules"]

FREE_TEXT_TOOLS = frozenset({"calculate", "think"})
"""τ tools that read nothing from the domain and change nothing."""
_ALWAYS_PUBLIC = (*FREE_TEXT_TOOLS, "transfer_")
_OWNER_FIELDS = ("user_id", "customer_id", "patient_id")


def _table_for(argument: str, tables: Mapping[str, Any]) -> str | None:
    """`order_id` -> `orders`, when the state has that table."""
    if not argument.endswith("_id"):
        return None
    name = argument.removesuffix("_id") + "s"
    return name if name in tables else None


def _owned(table: str, tables: Mapping[str, Any]) -> bool:
    """Rows of the table belong to a customer: the identity table itself, or rows with an owner."""
    if any(table == field.removesuffix("_id") + "s" for field in _OWNER_FIELDS):
        return True
    first: Any = next(iter(tables[table].values()), {})
    return isinstance(first, dict) and any(field in first for field in _OWNER_FIELDS)


class DerivedRules(DomainRules):
    def __init__(self, toolkit: Toolkit, tables: Mapping[str, Any]) -> None:
        super().__init__(toolkit)  # auth and public tools from the tools' metadata
        self.free_text_tools = FREE_TEXT_TOOLS & frozenset(toolkit.names)
        public = set(self.public_tools)
        for tool in toolkit:
            if tool.writes:
                continue
            arguments = tool.schema["function"].get("parameters", {}).get("properties", {})
            owned = [a for a in arguments if (t := _table_for(a, tables)) is not None and _owned(t, tables)]
            if tool.name.startswith(_ALWAYS_PUBLIC) or not (owned or set(arguments) & set(_OWNER_FIELDS)):
                public.add(tool.name)
        self.public_tools = frozenset(public)
        self._status: dict[str, tuple[str, str, str]] = {}
        """write tool -> (argument, table, status its name requires)."""
        for tool in toolkit:
            if not tool.writes:
                continue
            words = set(tool.name.split("_"))
            for argument in tool.schema["function"].get("parameters", {}).get("properties", {}):
                table = _table_for(argument, tables)
                if table is None:
                    continue
                statuses = {str(row.get("status")) for row in tables[table].values() if isinstance(row, dict)}
                for word in sorted(words & statuses):
                    self._status[tool.name] = (argument, table, word)

    def _finding(self, call: ToolCall, status: Any) -> list[RuleFinding]:
        _, table, needed = self._status[call.name]
        if str(status) == needed:
            return []
        return [
            RuleFinding("domain_violation", f"{call.name} needs a {needed} row of {table}, it is {status}")
        ]

    def visible_findings(self, call: ToolCall, observed: list[ObservedCall]) -> list[RuleFinding]:
        if call.name not in self._status:
            return []
        argument, _, _ = self._status[call.name]
        wanted = call.arguments.get(argument)
        for seen in reversed(observed):
            result = seen.result()
            found = not seen.error and isinstance(result, dict) and result.get(argument) == wanted
            if found and "status" in result:
                return self._finding(call, result["status"])
        return []

    def state_findings(self, call: ToolCall, db: Database) -> list[RuleFinding]:
        if call.name not in self._status:
            return []
        argument, table, _ = self._status[call.name]
        row = db.row(table, str(call.arguments.get(argument)))
        if row is None:
            return []
        return self._finding(call, row.get("status"))
