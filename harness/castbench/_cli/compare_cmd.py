"""`castbench compare RUN_A RUN_B`: two runs task by task, with paired intervals."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from castbench._base.defaults import DEFAULT_DB
from castbench._cli.errors import fail
from castbench._cli.options import DbOption

console = Console()

RunRef = Annotated[
    str, typer.Argument(help="Run id, unique prefix, 'latest', summary.json or exported run file.")
]
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Go on even if the runs differ in what they measured (domain versions, user simulator, "
        "step limit, traits, tasks, grading, critic loop) or are incomplete.",
    ),
]
ConfidenceOption = Annotated[
    float, typer.Option(min=0.5, max=0.999, help="Confidence of the paired bootstrap intervals.")
]


def compare_command(
    baseline: RunRef,
    candidate: RunRef,
    db: DbOption = DEFAULT_DB,
    force: ForceOption = False,
    confidence: ConfidenceOption = 0.95,
) -> None:
    """Difference in pass^k per domain on the tasks both runs scored (candidate − baseline),
    tasks that flipped between reliable and unreliable, and critic rates when present."""
    from castbench._results.compare.gate import GateError
    from castbench._results.compare.report import comparison_renderables
    from castbench._results.compare.sources import SourceError
    from castbench._results.decide import (
        comparison,  # what it loads, when it runs (tests/cli/test_cli_lazy.py)
    )

    try:
        result, problems = comparison(baseline, candidate, db=db, force=force, confidence=confidence)
    except (SourceError, GateError) as exc:
        fail(exc)
    for problem in problems:
        console.print(f"[bold yellow]warning (forced):[/] {escape(problem)}")
    for renderable in comparison_renderables(result):
        console.print(renderable)
