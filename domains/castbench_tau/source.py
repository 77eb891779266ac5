"""The installed `tau-trait` package, read at run time: nothing of τ's data or code is copied here.

`tau_trait` builds an OpenAI client when its user module is imported, which fails without an
`OPENAI_API_KEY`. We set a placeholder only for the duration of the import and remove it again,
so that a real model call later never goes out with a fake key.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import Any

__all__ = [
    "DOMAINS",
    "PACKAGE",
    "TauSource",
    "TauUnavailable",
    "import_tau",
    "load_source",
    "package_version",
]

PACKAGE = "tau-trait"
DOMAINS = ("retail", "airline", "telecom", "telehealth")

_TASK_MODULES = {"original": "tasks", "test": "tasks_test", "train": "tasks_train", "dev": "tasks_dev"}
"""Split -> module of `tau_trait.envs.<domain>`; `original` is the first τ-Bench release's list
(retail 115, airline 50 tasks), which τ's own env does not offer."""


class TauUnavailable(ImportError):
    """`tau-trait` is not installed: the τ packs need `pip install 'castbench[tau]'`."""


def package_version() -> str:
    try:
        return version(PACKAGE)
    except PackageNotFoundError as exc:
        raise TauUnavailable(
            f"the τ domain packs need the '{PACKAGE}' package: pip install 'castbench[tau]'"
        ) from exc


def import_tau(name: str) -> ModuleType:
    """Import a module of `tau_trait` (with the placeholder key it needs at import)."""
    placeholder = "OPENAI_API_KEY" not in os.environ
    if placeholder:
        os.environ["OPENAI_API_KEY"] = "unused-placeholder"
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise TauUnavailable(f"cannot import {name} ({exc}): pip install 'castbench[tau]'") from exc
    finally:
        if placeholder:
            os.environ.pop("OPENAI_API_KEY", None)


@dataclass(frozen=True)
class TauSource:
    """One τ environment as the package defines it."""

    domain: str
    version: str
    tools: tuple[Any, ...]
    """τ `Tool` classes: `invoke(data, **kwargs) -> str` mutates `data`; `get_info()` is the schema."""
    load_data: Callable[[], dict[str, Any]]
    wiki: str
    rules: tuple[str, ...]
    terminate_tools: tuple[str, ...]
    raw_tasks: dict[str, list[Any]]
    """Split -> τ `Task` objects, in the package's order (`original` converted from its dicts)."""
    env_class: type

    @property
    def splits(self) -> list[str]:
        return sorted(self.raw_tasks)


def _tasks_of(module: ModuleType, task_type: type, action_type: type) -> list[Any]:
    names = [name for name in dir(module) if name.startswith("TASKS") or name == "tasks"]
    tasks = getattr(module, names[0]) if names else []
    return [
        item
        if isinstance(item, task_type)
        else task_type(
            user_id=item["user_id"],
            instruction=item["instruction"],
            outputs=item.get("outputs", []),
            actions=[action_type(name=a["name"], kwargs=a["arguments"]) for a in item["actions"]],
        )
        for item in tasks
    ]


@cache
def load_source(domain: str) -> TauSource:
    if domain not in DOMAINS:
        raise KeyError(f"tau-trait has no domain '{domain}' (it has {', '.join(DOMAINS)})")
    release = package_version()
    types = import_tau("tau_trait.types")
    base = f"tau_trait.envs.{domain}"
    env_module = import_tau(f"{base}.env")
    env_class = next(
        value for name, value in vars(env_module).items() if name.startswith("Mock") and name.endswith("Env")
    )
    raw_tasks: dict[str, list[Any]] = {}
    for split, module_name in _TASK_MODULES.items():
        try:
            module = importlib.import_module(f"{base}.{module_name}")
        except ModuleNotFoundError:
            continue
        raw_tasks[split] = _tasks_of(module, types.Task, types.Action)
    rules = import_tau(f"{base}.rules").RULES
    # τ sets the tools that end an episode in each env's constructor: read them off one (a
    # `human` user strategy builds no model client)
    terminate = tuple(env_class(user_strategy="human", task_split="test", task_index=0).terminate_tools)
    return TauSource(
        domain=domain,
        version=release,
        tools=tuple(import_tau(f"{base}.tools").ALL_TOOLS),
        load_data=import_tau(f"{base}.data").load_data,
        wiki=import_tau(f"{base}.wiki").WIKI,
        rules=tuple(rules) if isinstance(rules, list) else (str(rules),),
        terminate_tools=terminate,
        raw_tasks=raw_tasks,
        env_class=env_class,
    )
