"""`castbench gate`: fail a CI build when a candidate agent credibly regressed.

Exit codes: 0 PASS, 1 FAIL, 2 unusable input, 3 UNDECIDED (the run is too small to decide;
`--undecided pass|fail` maps it to 0 or 1). The decision rule is in `castbench._results.compare.gate`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from castbench._base.defaults import DEFAULT_DB
from castbench._cli.checks import check_writable, validation_line
from castbench._cli.compare_cmd import ForceOption
from castbench._cli.errors import fail
from castbench._cli.options import DbOption
from castbench._results.compare.undecided import UndecidedPolicy

if TYPE_CHECKING:  # the gate's machinery loads when it runs, not for `--help`
    from castbench._results.compare.gate import Check, GateConfig
    from castbench._results.compare.plan import CheckPlan

console = Console()
_CHECKS = "Checks"
_OUT = "Reports"


def _cli_checks(metrics: list[str], drops: list[float], domain: str | None) -> list[Check]:
    from castbench._results.compare.gate import Check, GateError

    if not metrics:
        if drops:
            raise GateError("--max-drop needs --metric")
        return []
    if len(drops) not in (1, len(metrics)):
        raise GateError(
            f"give one --max-drop for all metrics or one per --metric (got {len(drops)} for {len(metrics)})"
        )
    paired = drops if len(drops) == len(metrics) else drops * len(metrics)
    try:
        return [Check(metric=m, max_drop=d, domain=domain) for m, d in zip(metrics, paired, strict=True)]
    except ValidationError as exc:
        raise GateError(validation_line(exc, {"metric": "--metric", "max_drop": "--max-drop"})) from None


BaselineOption = Annotated[
    str, typer.Option(help="Baseline: summary.json, exported run, or run id in --db.", show_default=False)
]
MetricOption = Annotated[
    list[str] | None, typer.Option(help="pass^k or pass@k; repeat for several.", rich_help_panel=_CHECKS)
]
MaxDropOption = Annotated[
    list[float] | None,
    typer.Option(help="Allowed drop: one for all metrics, or one per --metric.", rich_help_panel=_CHECKS),
]
DomainCheckOption = Annotated[
    str | None,
    typer.Option(help="Check this domain (default: all shared tasks pooled).", rich_help_panel=_CHECKS),
]
GateConfigOption = Annotated[
    Path | None,
    typer.Option(help="gate.toml with \\[\\[checks]] (metric, max_drop, domain).", rich_help_panel=_CHECKS),
]
ConfidenceOption = Annotated[
    float | None, typer.Option(min=0.5, max=0.999, help="Interval confidence \\[default: 0.95].")
]


def _settings(
    config: Path | None, metric: list[str] | None, max_drop: list[float] | None, domain: str | None
) -> tuple[GateConfig | None, list[Check]]:
    """gate.toml (if given) and its checks followed by those of the command line."""
    from castbench._results.compare.gate import load_gate_config

    settings = load_gate_config(config) if config else None
    checks = (settings.checks if settings else []) + _cli_checks(metric or [], max_drop or [], domain)
    return settings, checks


def gate_command(
    baseline: BaselineOption,
    candidate: Annotated[str, typer.Option(help="Candidate: as --baseline.", show_default=False)],
    metric: MetricOption = None,
    max_drop: MaxDropOption = None,
    domain: DomainCheckOption = None,
    config: GateConfigOption = None,
    confidence: ConfidenceOption = None,
    undecided: Annotated[
        UndecidedPolicy | None,
        typer.Option(help="Exit for UNDECIDED: undecided (3), fail (1) or pass (0) \\[default: undecided]."),
    ] = None,
    markdown: Annotated[
        Path | None, typer.Option(help="Write the verdict as Markdown.", rich_help_panel=_OUT)
    ] = None,
    junit: Annotated[
        Path | None, typer.Option(help="Write JUnit XML, one testcase per check.", rich_help_panel=_OUT)
    ] = None,
    db: DbOption = DEFAULT_DB,
    force: ForceOption = False,
) -> None:
    """PASS, FAIL or UNDECIDED for each check, from the paired bootstrap interval of
    candidate − baseline: FAIL if its upper bound < −max_drop, PASS if its lower bound ≥ −max_drop."""
    for option, file in (("--markdown", markdown), ("--junit", junit)):
        if file is not None:
            check_writable(option, file)  # before the work, not after it
    from castbench._results.compare.gate import GateError
    from castbench._results.compare.gate_report import gate_junit, gate_markdown, gate_panel
    from castbench._results.compare.sources import SourceError
    from castbench._results.decide import gate  # what it loads, when it runs

    try:
        settings, checks = _settings(config, metric, max_drop, domain)
        policy = undecided or (settings.undecided if settings else None) or UndecidedPolicy.UNDECIDED
        level = confidence or (settings.confidence if settings else None) or 0.95
        result = gate(baseline, candidate, checks, confidence=level, db=db, force=force)
    except (GateError, SourceError) as exc:
        fail(exc)
    console.print(gate_panel(result, policy))
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(gate_markdown(result, policy))
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(gate_junit(result, policy))
    raise typer.Exit(result.exit_code(policy))


def _plan_table(plan: CheckPlan) -> Table:
    table = Table(
        title=f"{plan.check.label}: allowed drop {plan.check.max_drop:.3f}, power {plan.power:.0%}, "
        f"{plan.confidence:.0%} intervals",
        title_justify="left",
    )
    for column in (
        "trials per task",
        "std. error",
        "tasks needed",
        f"decides on {plan.baseline_tasks} tasks",
    ):
        table.add_column(column, justify="right")
    for row in plan.rows:
        needed = "> 100000" if row.tasks_needed is None else str(row.tasks_needed)
        mark = "[green]yes[/]" if row.decides_with(plan.baseline_tasks) else "no"
        table.add_row(str(row.trials), f"{row.standard_error:.4f}", needed, mark)
    return table


def gate_plan_command(
    baseline: BaselineOption,
    metric: MetricOption = None,
    max_drop: MaxDropOption = None,
    domain: DomainCheckOption = None,
    config: GateConfigOption = None,
    power: Annotated[
        float,
        typer.Option(
            min=0.5, max=0.999, help="Chance the gate decides: PASS unchanged, FAIL worse by twice the drop."
        ),
    ] = 0.9,
    confidence: ConfidenceOption = None,
    db: DbOption = DEFAULT_DB,
) -> None:
    """How many tasks x trials a candidate run needs for each check to be decided, from the
    baseline's own per-task variance (see `castbench._results.compare.plan`)."""
    from castbench._results.compare.gate import GateError
    from castbench._results.compare.plan import plan_checks
    from castbench._results.compare.sources import SourceError, load_summary

    try:
        settings, checks = _settings(config, metric, max_drop, domain)
        level = confidence or (settings.confidence if settings else None) or 0.95
        plans = plan_checks(load_summary(baseline, db), checks, power=power, confidence=level)
    except (GateError, SourceError, ValueError) as exc:
        fail(exc)
    for plan in plans:
        console.print(_plan_table(plan))
        best = plan.recommended
        if best is None:
            console.print(
                f"[yellow]{escape(plan.check.label)}: no trial count up to {plan.rows[-1].trials} "
                f"decides it on {plan.baseline_tasks} tasks[/]: allow a larger drop or add tasks"
            )
        else:
            console.print(
                f"{escape(plan.check.label)}: {best.trials} trials per task on the baseline's "
                f"{plan.baseline_tasks} tasks decide it with {plan.power:.0%} power"
            )
