"""Finding domains: every installed package registered under the `castbench.domains` entry
point group, built-in or third-party, takes the same road.

An entry point that names an extra (`tau-retail = "castbench_tau:retail [tau]"`) is a domain
with an optional dependency: `all` leaves it out (name it to use it), and loading it without the
extra installed fails with the command that installs it."""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points

from castbench._domain.domain import Domain

__all__ = [
    "ENTRY_POINT_GROUP",
    "UnknownDomainError",
    "available_domains",
    "load_domain",
    "register_domain",
    "resolve_domains",
]

ENTRY_POINT_GROUP = "castbench.domains"

_registered: dict[str, Domain] = {}


class UnknownDomainError(KeyError):
    """A domain name no installed package provides (a `KeyError`, as before, that reads as a
    sentence rather than a quoted key)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def register_domain(domain: Domain) -> None:
    """Make a domain object available by name in this process (notebooks, tests, scripts)
    without installing a package."""
    _registered[domain.name] = domain


def available_domains(include_extras: bool = True) -> list[str]:
    """Names of the installed domains; `include_extras=False` leaves out those of an extra."""
    names = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP) if include_extras or not ep.extras}
    return sorted(names | set(_registered))


def load_domain(name: str) -> Domain:
    if name in _registered:
        return _registered[name]
    return _load_entry_point(name)


@cache
def _load_entry_point(name: str) -> Domain:
    matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not matches:
        known = ", ".join(available_domains()) or "none installed"
        raise UnknownDomainError(f"unknown domain '{name}' (installed: {known})")
    try:
        domain = matches[0].load()
    except ImportError as exc:
        extras = ",".join(matches[0].extras)
        hint = f": pip install 'castbench[{extras}]'" if extras else ""
        raise UnknownDomainError(f"domain '{name}' cannot be loaded ({exc}){hint}") from exc
    if not isinstance(domain, Domain):
        raise TypeError(f"entry point {matches[0].value} for domain '{name}' is not a Domain")
    return domain


def resolve_domains(spec: str | None) -> list[Domain]:
    """`None` or `all` -> every installed domain that needs no extra; else a comma-separated list
    of names."""
    if spec is None or spec.strip() == "all":
        return [load_domain(name) for name in available_domains(include_extras=False)]
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if not names:  # an empty --domain is a slip, not "every domain"
        raise UnknownDomainError("no domain given: name one or more (castbench domains list), or 'all'")
    return [load_domain(name) for name in names]
