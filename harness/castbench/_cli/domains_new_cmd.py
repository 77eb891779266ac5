"""`castbench domains new NAME`: a working domain pack to start from (`castbench._authoring.template`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from castbench._authoring.template import TemplateError, new_domain
from castbench._cli.errors import fail

__all__ = ["new_domain_command"]


def new_domain_command(
    name: Annotated[str, typer.Argument(help="The new domain's name (its --domain name).")],
    out: Annotated[
        Path | None, typer.Option(help="The folder to write (new or empty); default ./castbench_NAME.")
    ] = None,
    template: Annotated[
        Path | None, typer.Option(help="A template folder other than the one castbench ships.")
    ] = None,
) -> None:
    """Copy the domain template (a lending library that validates and that the
    oracle solves) under a new name, to edit into your own domain (docs/domains.md)."""
    folder = out if out is not None else Path(f"castbench_{name.replace('-', '_')}")
    try:
        made = new_domain(name, folder, template=template)
    except (TemplateError, OSError) as exc:
        fail(exc)
    typer.echo(f"domain {made.name}: package {made.package} in {made.root}")
    typer.echo(f"next: pip install -e {made.root} && castbench domains validate --domain {made.name}")
