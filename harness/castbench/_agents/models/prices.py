"""Per-token prices for the lean path, read from litellm's price map without importing litellm.

litellm ships its map as a JSON file; importing litellm to consult it costs seconds (and, done
from a trial thread, stalls every other trial behind the import lock). The file is found next
to the installed package and read once per process.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["UnitPrices", "unit_prices"]

_MAP_FILE = "model_prices_and_context_window_backup.json"
_map: dict[str, Any] | None = None
_lock = threading.Lock()


class UnitPrices(NamedTuple):
    input: float
    output: float


def _price_map() -> dict[str, Any]:
    global _map
    with _lock:
        if _map is None:
            spec = importlib.util.find_spec("litellm")  # locates the package, does not import it
            origin = spec.origin if spec is not None else None
            try:
                _map = json.loads((Path(origin).parent / _MAP_FILE).read_text()) if origin else {}
            except (OSError, ValueError):
                _map = {}
        return _map


def unit_prices(model: str) -> UnitPrices | None:
    """USD per input and output token of `provider/name`, if litellm's map knows it."""
    prices = _price_map()
    provider, _, name = model.partition("/")
    entry = prices.get(model)
    if entry is None and prices.get(name, {}).get("litellm_provider") == provider:
        entry = prices[name]
    if not isinstance(entry, dict):
        return None
    try:
        return UnitPrices(float(entry["input_cost_per_token"]), float(entry["output_cost_per_token"]))
    except (KeyError, TypeError, ValueError):
        return None
