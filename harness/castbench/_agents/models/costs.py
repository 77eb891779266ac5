"""What `--max-cost` can count: castbench prices the model calls it makes itself, from their
tokens and a known price, and nothing else.

Why: a cost is only a figure castbench can stand behind when castbench computed it. An agent's
own account of its spending (the `usage` on its actions and verdicts, or reported at a trial's
end) is the agent's to choose: a negative figure once kept a run under its cap forever
(`castbench._agents.transports.wire.from_agent` drops it at the boundary and keeps the tokens).
So a cap over an agent that calls its models itself, or over a model castbench has no price
for, caps nothing there; castbench says so before the first trial instead of letting the cap
look like a guarantee.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from castbench._agents.models.prices import unit_prices
from castbench._agents.registry import AgentSpec

__all__ = ["max_cost_gaps", "price_known", "warn_max_cost_gaps"]

log = logging.getLogger("castbench._agents.models")


def price_known(params: dict[str, Any]) -> bool:
    """Whether castbench can price a model agent's calls: prices given in its settings, or a
    model litellm's price map knows."""
    from castbench._agents.models.compat import PRICE_KEYS  # (its HTTP clients: not for a run without models)

    if all(key in params for key in PRICE_KEYS):
        return True
    model = params.get("model")
    return isinstance(model, str) and unit_prices(model) is not None


def max_cost_gaps(specs: Iterable[tuple[str, AgentSpec]], max_cost: float | None) -> list[str]:
    """One `warning:` line per role whose spending `--max-cost` cannot count (none without a cap)."""
    if max_cost is None:
        return []
    gaps = []
    for role, spec in specs:
        if spec.kind == "model" and not price_known(spec.params):
            model = spec.params.get("model", spec.name)
            gaps.append(
                f"warning: --max-cost ${max_cost:g}: the {role} model '{model}' has no price castbench knows "
                "(litellm's map has none; set input_cost_per_token and output_cost_per_token in "
                "--models-config): its calls count $0 toward the cap"
            )
        elif spec.kind in ("import", "service"):
            gaps.append(
                f"warning: --max-cost ${max_cost:g}: the {role} '{spec.name}' calls its models itself; "
                "castbench never takes an agent's own cost figure, so the cap does not count its spending"
            )
    return gaps


def warn_max_cost_gaps(specs: Iterable[tuple[str, AgentSpec]], max_cost: float | None) -> None:
    """Say each of `max_cost_gaps` on the console (the log's warnings reach stderr)."""
    for gap in max_cost_gaps(specs, max_cost):
        log.warning("%s", gap)
