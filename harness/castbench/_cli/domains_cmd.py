"""`castbench domains list` and `castbench tasks list|show`; a satellite adds subcommands to the two
groups through the `castbench.commands` entry point, named `GROUP.NAME` (`domains.new`,
`domains.validate` and `tasks.generate`: castbench_authoring)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from castbench._cli.errors import fail
from castbench._cli.options import (
    DomainOption,
    PackOptionFlag,
    SplitOption,
    Tau2DataOption,
    add_plugin_commands,
)
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


add_plugin_commands({"domains": domains_app, "tasks": tasks_app})
