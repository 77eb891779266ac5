"""The typer pin of pyproject.toml allows no release that lacks what the CLI uses of typer's
private names: each name castbench's code uses, and the first typer release that has it.

A name that is not listed fails here until its first release is looked up (the wheels of typer
on PyPI: `pip download --no-deps typer==X`) and the pin raised to it where needed; the CLI tests
were run on the pin's lowest release when it was set (0.29.0: they pass; 0.28.0: `castbench eval
--help` fails on `typer.main._get_param`)."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]

FIRST_RELEASE = {
    "typer._click": "0.26.0",  # typer's vendored click, and its modules (`typer._click.exceptions`)
    "typer.main._get_param": "0.29.0",
}
"""Each private typer name the CLI uses, and the first typer release that has it."""

PRIVATE = re.compile(r"\btyper(?:\.\w+)*\._\w+")


def _used() -> set[str]:
    found = set()
    for path in (ROOT / "harness" / "castbench").rglob("*.py"):
        text = path.read_text()
        found |= set(PRIVATE.findall(text))
        if re.search(r"from typer import _click\b", text):
            found.add("typer._click")
    return found


def _pin() -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return next(Requirement(dep) for dep in project["dependencies"] if Requirement(dep).name == "typer")


def test_every_private_typer_name_the_cli_uses_has_its_first_release() -> None:
    used = _used()
    assert "typer.main._get_param" in used  # the scan finds them
    assert not used - set(FIRST_RELEASE), (
        f"look up the first typer release of {sorted(used - set(FIRST_RELEASE))}"
    )


def test_the_pin_admits_no_release_without_them_and_the_installed_one() -> None:
    pin = _pin()
    lowest = max(Version(FIRST_RELEASE[name]) for name in _used())
    below = Version(f"{lowest.major}.{lowest.minor - 1}.99") if lowest.minor else None
    assert below is None or not pin.specifier.contains(below), f"{pin} admits {below}"
    assert pin.specifier.contains(lowest), f"{pin} excludes {lowest}, the first release with every name"
    assert pin.specifier.contains(version("typer")), "the installed typer is outside the pin"
