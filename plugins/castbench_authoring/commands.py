"""The satellite's commands, subcommands of the core's `domains` and `tasks` groups (the
`castbench.commands` entry points `domains.new`, `domains.validate` and `tasks.generate`):

- `castbench domains new NAME`: a working domain pack to start from (`castbench_authoring.template`);
- `castbench tasks generate`: a private test split (`castbench_authoring.private`);
- `castbench domains validate`: every task's gold replays and is graded passing, the refusing floor
  passes none (`castbench_authoring.validate`, `castbench_authoring.oracle_check`).

Each loads its module when it runs: listing the commands costs typer only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from castbench import fail
from castbench._cli.options import DomainOption, PackOptionFlag, Tau2DataOption

__all__ = ["generate_tasks_command", "new_domain_command", "validate_domains_command"]

_console = Console()


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


def validate_domains_command(
    domain: DomainOption = "all",
    tasks_file: Annotated[
        Path | None,
        typer.Option(
            help="Check this private split instead (`castbench tasks generate`): every gold replays, "
            "the oracle scores 1.0 on every task, no task duplicates a public one.",
        ),
    ] = None,
    pack_option: PackOptionFlag = None,  # applied as parsed, before any pack loads
    tau2_data: Tau2DataOption = None,  # deprecated: --pack-option tau2.data=DIR
) -> None:
    """Replay every task's ground truth and play it with the refusing floor; exit 1 on any broken
    task or any task refusing everything passes."""
    from rich.markup import escape

    from castbench._domain.registry import resolve_domains
    from castbench_authoring.oracle_check import validate_domain

    if tasks_file is not None:
        _validate_private(tasks_file)
    failed = False
    for item in resolve_domains(domain):
        report = validate_domain(item)
        counts = ", ".join(f"{split} {count}" for split, count in report.counts.items())
        if report.ok:
            _console.print(f"[green]✓[/] {escape(f'{report.domain} {report.version}: {counts}')} tasks valid")
            if report.excluded:
                _console.print(f"   [yellow]{len(report.excluded)} broken task(s) excluded from scores:[/]")
                for line in report.excluded:
                    _console.print(f"   {escape(line)}")
            if report.refused:
                _console.print(
                    f"   [yellow]{len(report.refused)} task(s) refusing everything passes, "
                    "kept as the published set grades them:[/]"
                )
                for line in report.refused:
                    _console.print(f"   {escape(line)}")
        else:
            failed = True
            _console.print(
                f"[red]✗[/] {escape(f'{report.domain} {report.version}')}: {len(report.problems)} problem(s)"
            )
            for problem in report.problems[:50]:
                _console.print(f"   {escape(problem)}")
    raise typer.Exit(1 if failed else 0)


def _validate_private(path: Path) -> None:
    from rich.markup import escape

    from castbench._domain.private import use_tasks_file
    from castbench._domain.registry import load_domain
    from castbench._domain.task import TaskFileError
    from castbench_authoring.oracle_check import oracle_failures
    from castbench_authoring.validate import private_problems

    try:
        split = use_tasks_file(path)
    except TaskFileError as exc:
        fail(exc)
    domain = load_domain(split.domain)
    problems = private_problems(domain, split)
    if not problems:  # the oracle on tasks whose gold replays
        problems = oracle_failures(domain, split.tasks)
    what = f"{split.domain} {split.split} ({len(split.tasks)} tasks) from {path}"
    if problems:
        _console.print(f"[red]✗[/] {escape(what)}: {len(problems)} problem(s)")
        for problem in problems[:50]:
            _console.print(f"   {escape(problem)}")
        raise typer.Exit(1)
    checks = "every gold replays, the oracle scores 1.0, no task duplicates a public one"
    _console.print(f"[green]✓[/] {escape(what)}: {checks}")
    raise typer.Exit(0)
