"""`castbench runs list|show`: what the store holds."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from castbench.cli.options import DbOption
from castbench.report import print_summary, print_trial, summarize_run
from castbench.store import DEFAULT_DB, ResultsStore, StoreError

runs_app = typer.Typer(help="Stored runs.", no_args_is_help=True)
console = Console()


@runs_app.command("list")
def list_runs(db: DbOption = DEFAULT_DB) -> None:
    """Every stored run with its configuration and trial count."""
    store = ResultsStore(db)
    table = Table(title=f"runs in {db}", title_justify="left")
    for column in ("run", "created", "status", "domains", "policy", "critic", "user", "n", "seed", "trials"):
        table.add_column(column)
    for row in store.runs():
        config = json.loads(row.config_json)
        table.add_row(
            row.id,
            row.created.strftime("%Y-%m-%d %H:%M"),
            row.status,
            ",".join(config["domains"]),
            config["policy"],
            config["critic"],
            config["user"],
            str(config["trials"]),
            str(config["seed"]),
            str(store.count_trials(row.id)),
        )
    console.print(table)


@runs_app.command("show")
def show_run(
    run: Annotated[str, typer.Argument(help="Run id, a unique prefix of it, or 'latest'.")],
    task: Annotated[str | None, typer.Option(help="Show this task's trials step by step.")] = None,
    trial: Annotated[int | None, typer.Option(help="With --task: only this trial index.")] = None,
    failures: Annotated[int, typer.Option(help="How many failed trials to show with their diff.")] = 3,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Per-task successes, then failures with their state diff (or one task's trials in full)."""
    store = ResultsStore(db)
    try:
        row = store.run(run)
    except StoreError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    config = store.config(row.id)
    records = store.trials(row.id)
    if task is not None:
        chosen = [r for r in records if r.task_id == task and (trial is None or r.trial_index == trial)]
        if not chosen:
            console.print(f"[bold red]error:[/] run {row.id} has no trials of task '{task}'")
            raise typer.Exit(2)
        for record in chosen:
            print_trial(record, console)
        return
    summary = summarize_run(row.id, config, records)
    print_summary(summary, console)
    per_task = Table(title="per task", title_justify="left")
    for column in ("domain", "task", "successes", "trials"):
        per_task.add_column(column)
    for domain, report in summary.domains.items():
        for task_id, outcome in report.per_task.items():
            marks = "".join(
                "[green]●[/]" if r.passed else "[red]●[/]"
                for r in records
                if r.domain == domain and r.task_id == task_id
            )
            per_task.add_row(domain, task_id, f"{outcome.successes}/{outcome.n}", marks)
    console.print(per_task)
    for record in [r for r in records if not r.passed][:failures]:
        print_trial(record, console)
