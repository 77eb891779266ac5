"""An on-disk cache of model answers (`--cache DIR`; off by default).

It serves re-running a stored configuration (say, after changing a report) without paying the
provider again. The key covers the role, model, generation settings, the full request AND the
trial's seed and index: n trials of one task at temperature > 0 are n different samples and must
never collapse into one cached answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["ResponseCache", "cache_key"]


def cache_key(request: dict[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ResponseCache:
    """One JSON file per answer, written atomically (safe with concurrent trials)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            value = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "w") as out:
            json.dump(value, out)
        os.replace(temporary, path)
