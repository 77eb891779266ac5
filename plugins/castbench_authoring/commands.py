"""The satellite's commands, subcommands of the core's `domains` and `tasks` groups (the
`castbench.commands` entry points `domains.new` and `tasks.generate`):

- `castbench domains new NAME`: a working domain pack to start from (`castbench_authoring.template`);
- `castbench tasks generate`: a private test split (`castbench_authoring.private`).

Each loads its module when it runs: listing the commands costs typer only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from castbench import fail

__all__ = ["generate_tasks_command", "new_domain_command"]


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
    from castbench_authoring.template import TemplateError, new_domain

    folder = out if out is not None else Path(f"castbench_{name.replace('-', '_')}")
    try:
        made = new_domain(name, folder, template=template)
    except (TemplateError, OSError) as exc:
        fail(exc)
    typer.echo(f"domain {made.name}: package {made.package} in {made.root}")
    typer.echo(f"next: pip install -e {made.root} && castbench domains validate --domain {made.name}")


def generate_tasks_command(
    domain: Annotated[str, typer.Option("--domain", "-d", help="One castbench domain (it has a generator).")],
    seed: Annotated[
        int, typer.Option(help="The private seed: keep it to yourself; the file never holds it.")
    ],
    count: Annotated[int, typer.Option(help="Tasks to draw, in the test split's family mix.")],
    out: Annotated[Path, typer.Option(help="Where to write the split (JSON).")],
) -> None:
    """Draw a private test split nobody has seen from the domain's own families, in the test
    split's mix; it is named by the digest of its tasks (`eval --tasks-file`, docs/counterfactuals.md)."""
    from castbench._cli.checks import check_writable
    from castbench.domain import load_domain
    from castbench_authoring.generation import GenerationError
    from castbench_authoring.private import generate_private, write_private

    check_writable("--out", out)
    try:
        split = generate_private(load_domain(domain), seed, count)
    except (GenerationError, KeyError, ValueError) as exc:
        fail(exc)
    write_private(split, out)
    mix = ", ".join(f"{family} {number}" for family, number in split.families.items() if number)
    console = Console()
    console.print(f"{split.domain}: {len(split.tasks)} tasks -> {out} (split {split.split})", markup=False)
    console.print(f"digest {split.digest}; families: {mix}", markup=False)
