"""What an import-path agent declares it needs beyond the strictest sandbox (`SandboxNeeds`), and
reading it off the agent (`declared_needs`). Apart from `castbench._agents.sandbox` (which
re-exports both): an agent's spec and the run's placement record the needs, and a process that
only records them (a resume, a report) does not import the sandbox's Landlock, seccomp and
file-scanning machinery (#59)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

__all__ = ["WIDE_PORTS", "SandboxNeeds", "declared_needs"]


# -- what an agent declares ---------------------------------------------------------------------


class SandboxNeeds(BaseModel):
    """What an import-path agent declares it needs beyond the strictest sandbox, as class (or
    factory) attributes:

    - `sandbox_env = ("OPENAI_API_KEY",)`: environment variables passed from castbench's
      environment (when set there);
    - `sandbox_connect = (8000,)`: TCP ports it may connect to (on any host: Landlock filters
      ports, not addresses);
    - `sandbox_read = ("/models/qwen",)`: absolute paths it may read (carved like everything else:
      domain packages, stores, exports, temporary folders and castbench's state stay out of reach);
    - `sandbox_udp = (53,)`: UDP ports it sends to. The kernel filters UDP by port nowhere, so any
      declared UDP port opens UDP to every port (the run is recorded unsandboxed for UDP); 53 also
      grants `/etc/resolv.conf` (DNS). Without it, UDP sockets cannot be made at all.

    Recorded on the agent's `AgentSpec` (`sandbox_needs`) so the run's provenance can show it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    env: tuple[str, ...] = ()
    connect: tuple[int, ...] = ()
    read: tuple[str, ...] = ()
    udp: tuple[int, ...] = ()

    @field_validator("env")
    @classmethod
    def _names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not name or "=" in name or "\0" in name:
                raise ValueError(f"'{name}' is not an environment variable name")
        return tuple(sorted(set(value)))

    @field_validator("connect", "udp")
    @classmethod
    def _ports(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        for port in value:
            if not 0 < port < 65536:
                raise ValueError(f"{port} is not a port (1-65535)")
        return tuple(sorted(set(value)))

    @field_validator("read")
    @classmethod
    def _paths(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for path in value:
            if not os.path.isabs(path):
                raise ValueError(f"'{path}' is not an absolute path")
        return tuple(sorted(set(value)))

    @property
    def empty(self) -> bool:
        return not (self.env or self.connect or self.read or self.udp)

    @property
    def opened(self) -> tuple[str, ...]:
        """The resources this declaration leaves unsandboxed: `filesystem` (a read of `/`),
        `tcp` (every port, or more than `WIDE_PORTS` of them), `udp` (any UDP port: the kernel
        cannot narrow it)."""
        found = []
        if "/" in self.read:
            found.append("filesystem")
        if len(self.connect) > WIDE_PORTS:
            found.append("tcp")
        if self.udp:
            found.append("udp")
        return tuple(found)

    def summary(self, most: int = 3) -> str:
        """`env OPENAI_API_KEY, port 8000, read /models`, each kind cut to `most` items and a
        count (`ports 1-65535 (65535)`): a provenance cell stays small whatever was declared."""
        parts = _listed("env", [*self.env], most)
        parts += _listed("port", _port_ranges(self.connect), most, len(self.connect))
        parts += _listed("udp port", _port_ranges(self.udp), most, len(self.udp))
        parts += _listed("read", [*self.read], most)
        return ", ".join(parts)


WIDE_PORTS = 64
"""More declared TCP ports than this count as the network opened (no model server needs them)."""


def _port_ranges(ports: tuple[int, ...]) -> list[str]:
    """`(1, 2, 3, 8000)` -> `["1-3", "8000"]`."""
    ranges: list[list[int]] = []
    for port in ports:
        if ranges and port == ranges[-1][1] + 1:
            ranges[-1][1] = port
        else:
            ranges.append([port, port])
    return [str(a) if a == b else f"{a}-{b}" for a, b in ranges]


def _listed(kind: str, items: list[str], most: int, count: int | None = None) -> list[str]:
    if not items:
        return []
    count = len(items) if count is None else count
    shown = [f"{kind} {item}" for item in items[:most]]
    if len(items) > most:
        shown.append(f"{len(items) - most} more {kind} entries ({count} in all)")
    elif count > len(items):
        shown[-1] += f" ({count} in all)"
    return shown


_DECLARATIONS = {
    "sandbox_env": "env",
    "sandbox_connect": "connect",
    "sandbox_read": "read",
    "sandbox_udp": "udp",
}


def declared_needs(target: Any, path: str) -> SandboxNeeds:
    """The needs the agent `target` (imported from `path`) declares. `ValueError` naming the
    attribute when a declaration is malformed (a string where a tuple is due, a bad port)."""
    raw: dict[str, Any] = {}
    for attribute, field in _DECLARATIONS.items():
        if field == "udp" and not getattr(target, attribute, ()):
            continue  # left unset: the needs of agents that declare no UDP dump (and hash) as before
        value = getattr(target, attribute, ())
        if isinstance(value, str | bytes) or not isinstance(value, Iterable):
            raise ValueError(f"'{path}': {attribute} must be a tuple (got {value!r})")
        raw[field] = tuple(value)
    try:
        return SandboxNeeds.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{next(a for a, f in _DECLARATIONS.items() if f == err['loc'][0])}: {err['msg']}"
            for err in exc.errors()
        )
        raise ValueError(f"'{path}': {problems}") from exc
