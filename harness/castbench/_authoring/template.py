"""`castbench domains new NAME`: a new domain pack copied from the template (`template_folder`).

Why a copy of a working domain rather than a skeleton of empty files: a copy passes
`castbench domains validate` and scores 1.000 with the oracle before its author changes a line,
so each edit after it can be checked on its own. The template is the lending library of
this package's `domain-template/` folder (docs/domains.md walks through it); the copy is renamed
where a name must be unique among installed domains (the package, the distribution, the entry
point, the domain's name and its task ids), and keeps the library's content for its author to
replace.

The template is package data of `castbench._authoring` (pyproject's `[tool.setuptools.package-data]`):
it ships in castbench's wheel, so `castbench domains new` works from an installed castbench as from
a checkout. Its folder name is not a Python name, so no tool reads it as a module of castbench.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from castbench._domain.registry import available_domains

__all__ = ["TEMPLATE_PACKAGE", "NewDomain", "TemplateError", "new_domain", "template_folder"]

TEMPLATE_FOLDER = "domain-template"
"""The template's folder in this package (package data)."""
TEMPLATE_NAME = "library"
TEMPLATE_PACKAGE = "castbench_library"
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
_TEXT = frozenset({".py", ".toml", ".json", ".md", ".txt", ".cfg"})
"""The files whose text is renamed (each rule names one exact spelling: the library's content stays)."""


class TemplateError(ValueError):
    """A domain that cannot be made as asked (a bad or taken name, an occupied folder, no
    template); the message says which and what to do."""


@dataclass(frozen=True)
class NewDomain:
    name: str
    """The domain's name: `--domain NAME` and its entry point."""
    package: str
    """Its Python package (`castbench_NAME`, a hyphen as `_`)."""
    root: Path
    """The folder written: `pip install -e ROOT` installs the pack."""


def template_folder() -> Path:
    """The template castbench ships: `domain-template/` beside this module, where castbench is
    installed (a wheel's site-packages or an editable checkout)."""
    return Path(str(files(__package__ or "castbench._authoring") / TEMPLATE_FOLDER))


def new_domain(name: str, out: Path, *, template: Path | None = None) -> NewDomain:
    """Copy the template to `out` as the domain `name` (its package `castbench_<name>`)."""
    if not _NAME.match(name):
        raise TemplateError(
            f"domain name '{name}': use lower-case letters and digits, words joined by '-' or '_' "
            "(it is the --domain name and, with 'castbench_', the package name)"
        )
    if name in available_domains():
        raise TemplateError(
            f"domain name '{name}': an installed domain has it already (castbench domains list)"
        )
    source = template if template is not None else template_folder()
    if not (source / TEMPLATE_PACKAGE / "__init__.py").is_file():
        raise TemplateError(
            f"no domain template at {source} "
            f"(castbench ships one as castbench/_authoring/{TEMPLATE_FOLDER}): "
            "pass the folder of a template (--template), or reinstall castbench"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise TemplateError(f"{out}: exists and is not an empty folder; choose a new one")
    package = "castbench_" + name.replace("-", "_")
    shutil.copytree(
        source, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build")
    )
    (out / TEMPLATE_PACKAGE).rename(out / package)
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.suffix in _TEXT:
            path.write_text(_renamed(path.read_text(), name, package))
    return NewDomain(name=name, package=package, root=out)


def _renamed(text: str, name: str, package: str) -> str:
    """The template's text with its names replaced by the new domain's."""
    text = text.replace(TEMPLATE_PACKAGE, package).replace("castbench-library", package.replace("_", "-"))
    text = re.sub(rf'^{TEMPLATE_NAME} = "', f'{name} = "', text, flags=re.MULTILINE)  # the entry point
    text = text.replace(f'name="{TEMPLATE_NAME}"', f'name="{name}"')  # the Domain
    return text.replace(f'"id": "{TEMPLATE_NAME}-', f'"id": "{name}-')  # its task ids
