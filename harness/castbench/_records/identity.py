"""What makes two runs the same run: the options *and* the code and data behind them.

A run is resumed only when everything that can change its results is unchanged: the normalised
options (`RunConfig` without its fingerprint), the agents' code, the domains' task and data
files, and castbench's version. Options alone are not enough: after fixing an agent's code the
old trials would be reused ("0 trials run"), and an edited task file would resume trials graded
against the old task.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from castbench._agents.code import agent_code
from castbench._agents.registry import AgentSpec, Role, is_builtin
from castbench._base.version import __version__

if TYPE_CHECKING:  # a run's options read this module's models; the domains load only for fingerprints
    from castbench._domain.domain import Domain

__all__ = ["Fingerprint", "agent_blind_spots", "agent_fingerprint", "domain_fingerprint", "fingerprint"]

_DOMAIN_CONTENT = ("tasks", "data", "policy.md")
"""What of a domain package decides results beyond its version: its tasks, seed data and policy."""


class Fingerprint(BaseModel):
    """Digests of everything behind a run that its options do not spell out."""

    castbench: str = ""
    agents: dict[str, str] = Field(default_factory=dict)
    """Role -> digest of the agent's code (import path), spec and parameters."""
    domains: dict[str, str] = Field(default_factory=dict)
    """Domain -> digest of its task files, data files and policy."""

    def changes(self, before: Fingerprint) -> list[str]:
        """What differs from `before`, in words ("the policy's code", "domain retail's task files")."""
        found: list[str] = []
        if self.castbench != before.castbench:
            found.append(f"castbench version ({before.castbench or 'unrecorded'} -> {self.castbench})")
        for role in sorted(self.agents.keys() | before.agents.keys()):
            if self.agents.get(role) != before.agents.get(role):
                found.append(f"the {role}'s code")
        for name in sorted(self.domains.keys() | before.domains.keys()):
            if self.domains.get(name) != before.domains.get(name):
                found.append(f"domain {name}'s task or data files")
        return found


def _digest(parts: Iterable[bytes]) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(len(part).to_bytes(8, "big"))
        hasher.update(part)
    return hasher.hexdigest()


def _files(root: Path, pattern: str) -> Iterator[bytes]:
    """Relative path and content of each file under `root` matching `pattern`, in sorted order."""
    for path in sorted(root.rglob(pattern)):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path.relative_to(root).as_posix().encode()
            yield path.read_bytes()


def agent_blind_spots(role: Role, spec: str) -> list[str]:
    """What the identity of the agent `spec` (as given on the command line) cannot see, in words:
    eval prints them, since a change there would resume a stale run. Empty for built-ins, models
    and services, whose identity is their name and options."""
    name = spec.partition("?")[0]
    if ":" not in name or "/" in name or is_builtin(role, name):
        return []
    return agent_code(name.partition(":")[0], role).blind_spots


def agent_fingerprint(spec: AgentSpec) -> str:
    """A built-in is its name and parameters (its code is castbench's version); a model its model
    string (its settings are among the run's options, bar the cache, which changes no result); an
    import-path agent also every file of its package (or its lone module) and of the sibling
    top-level modules its code imports (see `castbench._agents.code`)."""
    params = {} if spec.kind == "model" else spec.params
    described: dict[str, Any] = {"kind": spec.kind, "name": spec.name, "params": params}
    parts = [json.dumps(described, sort_keys=True, default=str).encode()]
    if spec.kind == "import":
        parts.extend(agent_code(spec.name.partition(":")[0], spec.role).parts())
    return _digest(parts)


def domain_fingerprint(domain: Domain) -> str:
    parts: list[bytes] = [domain.name.encode(), domain.version.encode()]
    for item in _DOMAIN_CONTENT:
        path = domain.root / item
        if path.is_dir():
            parts.extend(_files(path, "*"))
        elif path.is_file():
            parts.extend([item.encode(), path.read_bytes()])
    return _digest(parts)


def fingerprint(domains: Iterable[Domain], agents: Iterable[AgentSpec]) -> Fingerprint:
    return Fingerprint(
        castbench=__version__,
        agents={spec.role: agent_fingerprint(spec) for spec in agents},
        domains={domain.name: domain_fingerprint(domain) for domain in domains},
    )
