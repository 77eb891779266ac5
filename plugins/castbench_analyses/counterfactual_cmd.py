"""`castbench counterfactuals RUN`: what each verdict of a stored critic run did to its trial."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from castbench._base.defaults import DEFAULT_DB
from castbench._cli.checks import check_writable
from castbench._cli.errors import fail
from castbench._cli.options import DbOption

__all__ = ["counterfactuals_command", "show_counterfactuals"]

console = Console()


def show_counterfactuals(db: str, run: str, output: Path | None = None) -> dict[str, Any]:
    """Branch the run's trials at every verdict (or read the branches kept in the store), print the
    table and, with `output`, write the branches and figures as JSON. Returns the figures (the
    JSON of `CounterfactualSummary`), for `eval --counterfactuals --output`."""
    from castbench._agents.registry import AgentSpecError
    from castbench._domain.task import TaskFileError
    from castbench._records.store import ResultsStore
    from castbench_analyses.counterfactual import NotBranchable
    from castbench_analyses.counterfactual_metrics import summarize_branches
    from castbench_analyses.counterfactual_report import branches_json, kept_branches, print_counterfactuals

    store = ResultsStore(db)
    row = store.run(run)
    config = store.config(row.id)
    try:
        branches = kept_branches(store, row.id, config)
    except (NotBranchable, AgentSpecError, TaskFileError, ValueError) as exc:
        fail(f"run {row.id}: {exc}")
    summary = summarize_branches(branches, seed=config.seed)
    if output is not None:
        output.write_text(branches_json(branches, summary))
    print_counterfactuals(summary, config.critic, console)
    if output is not None:
        console.print(f"branches written to {output}", markup=False)
    figures: dict[str, Any] = summary.model_dump(mode="json")
    return figures


def counterfactuals_command(
    run: Annotated[str, typer.Argument(help="A critic run: its id, a unique prefix of it, or 'latest'.")],
    output: Annotated[Path | None, typer.Option(help="Write the branches and figures here (JSON).")] = None,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Branch a critic run's trials at every verdict and play the other verdict to the end: per
    critic, the flags (and passes) that saved a trial, cost one or changed nothing, and net trials
    saved per 100 verdicts with task-bootstrap intervals (docs/counterfactuals.md)."""
    if output is not None:
        check_writable("--output", output)
    show_counterfactuals(db, run, output)
