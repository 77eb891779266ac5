"""`castbench domains list|validate|new` and `castbench tasks list|show|generate`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from castbench._cli.domains_new_cmd import new_domain_command
from castbench._cli.errors import fail
from castbench._cli.options import DomainOption, PackOptionFlag, SplitOption, Tau2DataOption
from castbench._domain.domain import Domain
from castbench._domain.registry import available_domains, load_domain, resolve_domains

domains_app = typer.Typer(help="Installed domains.", no_args_is_help=True)
tasks_app = typer.Typer(help="Tasks of the installed domains.", no_args_is_help=True)
console = Console()


@domains_app.command("list")
def list_domains(
    pack_option: PackOptionFlag = None,  # applied as parsed, before any pack loads
    tau2_data: Tau2DataOption = None,  # deprecated: --pack-option tau2.data=DIR
) -> None:
    """Installed domains with their version, tools and task counts (those of an extra too)."""
    table = Table(title="domains", title_justify="left")
    for column in ("name", "version", "tools (write)", "splits", "description"):
        table.add_column(column)
    for name in available_domains():
        try:
            domain = load_domain(name)
        except KeyError as exc:
            table.add_row(escape(name), "–", "–", "–", escape(str(exc)))
            continue
        writes = sum(tool.writes for tool in domain.toolkit)
        splits = ", ".join(_split_count(domain, split) for split in domain.splits)
        cells = (domain.name, domain.version, f"{len(domain.toolkit)} ({writes})", splits, domain.description)
        table.add_row(*map(escape, cells))
    console.print(table)


def _split_count(domain: Domain, split: str) -> str:
    excluded = len(domain.excluded_tasks(split))
    return f"{split} {len(domain.tasks(split))}" + (f" (+{excluded} broken)" if excluded else "")


@domains_app.command("validate")
def validate(
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
    from castbench._run.oracle_check import validate_domain

    if tasks_file is not None:
        _validate_private(tasks_file)
    failed = False
    for item in resolve_domains(domain):
        report = validate_domain(item)
        counts = ", ".join(f"{split} {count}" for split, count in report.counts.items())
        if report.ok:
            console.print(f"[green]✓[/] {escape(f'{report.domain} {report.version}: {counts}')} tasks valid")
            if report.excluded:
                console.print(f"   [yellow]{len(report.excluded)} broken task(s) excluded from scores:[/]")
                for line in report.excluded:
                    console.print(f"   {escape(line)}")
            if report.refused:
                console.print(
                    f"   [yellow]{len(report.refused)} task(s) refusing everything passes, "
                    "kept as the published set grades them:[/]"
                )
                for line in report.refused:
                    console.print(f"   {escape(line)}")
        else:
            failed = True
            console.print(
                f"[red]✗[/] {escape(f'{report.domain} {report.version}')}: {len(report.problems)} problem(s)"
            )
            for problem in report.problems[:50]:
                console.print(f"   {escape(problem)}")
    raise typer.Exit(1 if failed else 0)


def _validate_private(path: Path) -> None:
    from castbench._authoring.private import private_problems
    from castbench._domain.private import use_tasks_file
    from castbench._domain.task import TaskFileError
    from castbench._run.oracle_check import oracle_failures

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
        console.print(f"[red]✗[/] {escape(what)}: {len(problems)} problem(s)")
        for problem in problems[:50]:
            console.print(f"   {escape(problem)}")
        raise typer.Exit(1)
    checks = "every gold replays, the oracle scores 1.0, no task duplicates a public one"
    console.print(f"[green]✓[/] {escape(what)}: {checks}")
    raise typer.Exit(0)


domains_app.command("new")(new_domain_command)


@tasks_app.command("generate")
def generate_tasks(
    domain: Annotated[str, typer.Option("--domain", "-d", help="One castbench domain (it has a generator).")],
    seed: Annotated[
        int, typer.Option(help="The private seed: keep it to yourself; the file never holds it.")
    ],
    count: Annotated[int, typer.Option(help="Tasks to draw, in the test split's family mix.")],
    out: Annotated[Path, typer.Option(help="Where to write the split (JSON).")],
) -> None:
    """Draw a private test split nobody has seen from the domain's own families, in the test
    split's mix; it is named by the digest of its tasks (`eval --tasks-file`, docs/counterfactuals.md)."""
    from castbench._authoring.generation import GenerationError
    from castbench._authoring.private import generate_private, write_private
    from castbench._cli.checks import check_writable

    check_writable("--out", out)
    try:
        split = generate_private(load_domain(domain), seed, count)
    except (GenerationError, KeyError, ValueError) as exc:
        fail(exc)
    write_private(split, out)
    mix = ", ".join(f"{family} {number}" for family, number in split.families.items() if number)
    console.print(f"{split.domain}: {len(split.tasks)} tasks -> {out} (split {split.split})", markup=False)
    console.print(f"digest {split.digest}; families: {mix}", markup=False)


@tasks_app.command("list")
def list_tasks(
    domain: DomainOption = "all",
    split: SplitOption = "test",
    family: Annotated[str | None, typer.Option(help="Only tasks of this family.")] = None,
    pack_option: PackOptionFlag = None,  # applied as parsed, before any pack loads
    tau2_data: Tau2DataOption = None,  # deprecated: --pack-option tau2.data=DIR
) -> None:
    """Task ids, families and opening requests; then the split's tasks excluded from scores as
    broken (a published task set's), each with why."""
    table = Table(title=f"{split} tasks", title_justify="left")
    for column in ("id", "family", "outcome", "writes", "request"):
        table.add_column(column)
    excluded: list[str] = []
    for item in resolve_domains(domain):
        for task in item.tasks(split):
            if family and task.family != family:
                continue
            writes = sum(item.toolkit.is_write(call.name) for call in task.actions)
            cells = (task.id, task.family, task.outcome, str(writes), task.scenario.request[:80])
            table.add_row(*map(escape, cells))
        excluded.extend(f"{task_id}: {'; '.join(why)}" for task_id, why in item.excluded_tasks(split).items())
    console.print(table)
    if excluded:
        console.print(f"[yellow]{len(excluded)} broken task(s) excluded from this split's scores:[/]")
        for line in excluded:
            console.print(f"   {escape(line)}")


@tasks_app.command("show")
def show_task(
    task_id: Annotated[str, typer.Argument(help="The task's id, as `tasks list` shows it.")],
    domain: DomainOption = "all",
) -> None:
    """One task in full, as stored: the user's scenario and hidden facts, the gold actions and the
    grading checks (ground truth: for people reading it, never shown to agents)."""
    for item in resolve_domains(domain):
        for split in item.splits:
            for task in item.tasks(split):
                if task.id == task_id:
                    console.print(f"{item.name} {item.version}, {split} split", markup=False)
                    console.print_json(task.model_dump_json())
                    return
    fail(f"no task '{task_id}' in domain(s) {domain} (see `castbench tasks list`)")
