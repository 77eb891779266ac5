"""Options a domain pack declares for itself (`tau2.data`: the τ² packs' data directory), given to
any command as `--pack-option PACK.OPTION=VALUE` and to Python as `set_pack_option`.

The core names no pack: a pack declares its options as `PACK_OPTIONS` (a `PackOptions`) in the
module its `castbench.domains` entry points name (`castbench_tau2:retail` -> `castbench_tau2`),
and each option is an environment variable the pack reads when it loads. Setting one before the
packs load (the command line applies them as it parses, before any command runs) reaches this
process, its agent workers and a local Ray cluster alike; what the pack then reads is its to
record (`Domain.data_origin`, a digest in its version), so a run's identity is the same however
the option was given (the flag, the variable, this function).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Literal

from castbench._domain.registry import ENTRY_POINT_GROUP

__all__ = [
    "DECLARATION",
    "PackOption",
    "PackOptionError",
    "PackOptions",
    "declared_pack_options",
    "set_pack_option",
    "set_pack_options",
]

DECLARATION = "PACK_OPTIONS"
"""The attribute of a pack's module that declares its options (a `PackOptions`)."""


class PackOptionError(ValueError):
    """A pack option that is not declared, or a value it refuses: the message names both."""


@dataclass(frozen=True)
class PackOption:
    """One option of a pack: the variable it sets and what it takes."""

    name: str
    help: str
    env: str
    """The environment variable the pack reads it from when it loads."""
    kind: Literal["directory", "text"] = "text"
    """`directory`: an existing directory, set as its resolved path."""
    expected: str = ""
    """What the value should be, said when it is refused (`tau2-bench's data/tau2`)."""

    def set(self, value: str) -> str:
        """Check `value` and set the option's variable to it (a directory resolved); returns what
        was set."""
        if self.kind == "directory":
            path = Path(value).expanduser()
            if not path.is_dir():
                wanted = f" (expected {self.expected})" if self.expected else ""
                raise PackOptionError(f"{value} is not a directory{wanted}")
            value = str(path.resolve())
        os.environ[self.env] = value
        return value


@dataclass(frozen=True)
class PackOptions:
    """A pack's options, under its name (`tau2`: `tau2.data`)."""

    pack: str
    options: tuple[PackOption, ...]


@cache
def declared_pack_options() -> dict[str, PackOptions]:
    """The options of every installed pack, by pack name (a pack whose module cannot be imported,
    an extra not installed, declares none)."""
    declared: dict[str, PackOptions] = {}
    modules = dict.fromkeys(point.module for point in entry_points(group=ENTRY_POINT_GROUP))
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        found = getattr(module, DECLARATION, None)
        if isinstance(found, PackOptions):
            declared.setdefault(found.pack, found)
    return declared


def set_pack_option(name: str, value: str) -> str:
    """Set the pack option `name` (`tau2.data`) to `value` before the packs load; returns what was
    set. An option no installed pack declares, or a value it refuses, raises `PackOptionError`
    naming the pack and the option."""
    pack, dot, option = name.partition(".")
    if not value.strip():  # an empty directory would be read as the current one
        raise PackOptionError(f"'{name}': no value given (PACK.OPTION=VALUE, e.g. tau2.data=DIR)")
    declared = declared_pack_options()
    if not dot or not pack or not option:
        raise PackOptionError(f"'{name}': a pack option is named PACK.OPTION (e.g. tau2.data)")
    if pack not in declared:
        packs = ", ".join(sorted(declared)) or "none"
        raise PackOptionError(
            f"'{name}': no installed pack '{pack}' declares options (packs with options: {packs})"
        )
    chosen = next((item for item in declared[pack].options if item.name == option), None)
    if chosen is None:
        names = ", ".join(item.name for item in declared[pack].options)
        raise PackOptionError(f"'{name}': pack {pack} has no option '{option}' (its options: {names})")
    try:
        return chosen.set(value)
    except PackOptionError as exc:
        raise PackOptionError(f"{name}: {exc}") from None


def set_pack_options(settings: Iterable[str]) -> None:
    """Set each `PACK.OPTION=VALUE` of `settings` (as `--pack-option` gives them)."""
    for setting in settings:
        name, equals, value = setting.partition("=")
        if not equals:
            raise PackOptionError(f"'{setting}': expected PACK.OPTION=VALUE (e.g. tau2.data=DIR)")
        set_pack_option(name.strip(), value)
