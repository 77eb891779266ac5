"""The installed `tau-trait` package, read at run time: nothing of τ's data or code is copied here.

`tau_trait` builds an OpenAI client when its user module is imported, which fails without an
`OPENAI_API_KEY`. We set a placeholder only for the duration of the import and remove it again,
so that a real model call later never goes out with a fake key.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from functools import cache, cached_property
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType
from typing import Any

from castbench.domain import kept

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


class TauSource:
    """One τ environment as the package defines it, each part read on first use: the tools,
    data, wiki, rules and task lists import only their own modules of `tau_trait` (`_light`),
    never its package `__init__`s, which import litellm through τ's user simulator (5–13 s of
    CPU); only `env_class`, and `terminate_tools` the first time for a release, need those."""

    def __init__(self, domain: str, version: str) -> None:
        self.domain = domain
        self.version = version
        self._base = f"tau_trait.envs.{domain}"

    @cached_property
    def tools(self) -> tuple[Any, ...]:
        """τ `Tool` classes: `invoke(data, **kwargs) -> str` mutates `data`; `get_info()` is the schema."""
        return tuple(_light(self.domain, f"{self._base}.tools").ALL_TOOLS)

    @cached_property
    def load_data(self) -> Callable[[], dict[str, Any]]:
        return _light(self.domain, f"{self._base}.data").load_data  # type: ignore[no-any-return]

    @cached_property
    def wiki(self) -> str:
        return str(_light(self.domain, f"{self._base}.wiki").WIKI)

    @cached_property
    def rules(self) -> tuple[str, ...]:
        rules = _light(self.domain, f"{self._base}.rules").RULES
        return tuple(rules) if isinstance(rules, list) else (str(rules),)

    @cached_property
    def raw_tasks(self) -> dict[str, list[Any]]:
        """Split -> τ `Task` objects, in the package's order (`original` converted from its dicts)."""
        types = _light(self.domain, "tau_trait.types")
        raw: dict[str, list[Any]] = {}
        for split, module_name in _TASK_MODULES.items():
            try:
                module = _light(self.domain, f"{self._base}.{module_name}")
            except TauUnavailable as exc:
                if isinstance(exc.__cause__, ModuleNotFoundError):
                    continue
                raise
            raw[split] = _tasks_of(module, types.Task, types.Action)
        return raw

    @cached_property
    def splits(self) -> list[str]:
        return sorted(
            split for split, module in _TASK_MODULES.items() if _has_module(f"{self._base}.{module}")
        )

    @cached_property
    def env_class(self) -> type:
        """τ's `Mock<Domain>DomainEnv` (imports τ's package whole, litellm included)."""
        env_module = import_tau(f"{self._base}.env")
        return next(  # type: ignore[no-any-return]
            value
            for name, value in vars(env_module).items()
            if name.startswith("Mock") and name.endswith("Env")
        )

    @cached_property
    def terminate_tools(self) -> tuple[str, ...]:
        """The tools that end an episode, which τ sets in each env's constructor: read off one (a
        `human` user strategy builds no model client) once per release, then kept."""

        def read() -> str:
            env = self.env_class(user_strategy="human", task_split="test", task_index=0)
            return json.dumps(list(env.terminate_tools))

        return tuple(json.loads(kept(f"tau-{self.domain}-terminate-tools", [PACKAGE, self.version], read)))


def _has_module(name: str) -> bool:
    from importlib.util import find_spec

    parent, _, leaf = name.rpartition(".")
    spec = find_spec(parent.partition(".")[0])
    if spec is None or not spec.submodule_search_locations:
        return False
    folder = Path(next(iter(spec.submodule_search_locations))).joinpath(*parent.split(".")[1:])
    return (folder / f"{leaf}.py").is_file() or (folder / leaf / "__init__.py").is_file()


def _light(domain: str, name: str) -> ModuleType:
    """`tau_trait`'s module `name` without running the `__init__` of `tau_trait`, `tau_trait.envs`
    or `tau_trait.envs.<domain>` when they are not imported yet: each stands in as an empty
    package while the module loads, and leaves `sys.modules` afterwards (what was loaded under it
    stays, so a later full `import tau_trait` runs every `__init__` as usual and reuses it)."""
    if name in sys.modules:
        return sys.modules[name]
    from importlib.util import find_spec, module_from_spec

    stand_ins: list[tuple[str, ModuleType]] = []
    try:
        for package in ("tau_trait", "tau_trait.envs", f"tau_trait.envs.{domain}"):
            if package in sys.modules:
                continue
            spec = find_spec(package)
            if spec is None:
                raise ModuleNotFoundError(f"No module named '{package}'", name=package)
            module = module_from_spec(spec)  # its `__path__`, not its code
            sys.modules[package] = module
            stand_ins.append((package, module))
        return importlib.import_module(name)
    except ImportError as exc:
        raise TauUnavailable(f"cannot import {name} ({exc}): pip install 'castbench[tau]'") from exc
    finally:
        for package, module in reversed(stand_ins):
            if sys.modules.get(package) is module:
                del sys.modules[package]


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
    return TauSource(domain, package_version())
