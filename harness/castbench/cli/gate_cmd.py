"""`castbench gate`: fail a CI build when a candidate agent credibly regressed.

Exit codes: 0 PASS, 1 FAIL, 2 unusable input, 3 UNDECIDED (the run is too small to decide;
`--undecided pass|fail` maps it to 0 or 1). The decision rule is in `castbench.compare.gate`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from castbench.cli.compare_cmd import ForceOption
from castbench.cli.errors import fail
from castbench.cli.options import DbOption
from castbench.compare import (
    Check,
    GateError,
    SourceError,
    UndecidedPolicy,
    comparability_problems,
    load_gate_config,
    load_summary,
    run_gate,
)
from castbench.compare.gate_report import gate_junit, gate_markdown, gate_panel
from castbench.store import DEFAULT_DB

console = Console()
_CHECKS = "Checks"
_OUT = "Reports"


def _cli_checks(metrics: list[str], drops: list[float], domain: str | None) -> list[Check]:
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
    except ValueError as exc:
        raise GateError(str(exc)) from exc


def gate_command(
    baseline: Annotated[
        str, typer.Option(help="Baseline: summary.json, exported run, or run id in --db.", show_default=False)
    ],
    candidate: Annotated[str, typer.Option(help="Candidate: as --baseline.", show_default=False)],
    metric: Annotated[
        list[str] | None, typer.Option(help="pass^k or pass@k; repeat for several.", rich_help_panel=_CHECKS)
    ] = None,
    max_drop: Annotated[
        list[float] | None,
        typer.Option(help="Allowed drop: one for all metrics, or one per --metric.", rich_help_panel=_CHECKS),
    ] = None,
    domain: Annotated[
        str | None,
        typer.Option(help="Check this domain (default: all shared tasks pooled).", rich_help_panel=_CHECKS),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(help="gate.toml with [[checks]] (metric, max_drop, domain).", rich_help_panel=_CHECKS),
    ] = None,
    confidence: Annotated[
        float | None, typer.Option(min=0.5, max=0.999, help="Interval confidence [default: 0.95].")
    ] = None,
    undecided: Annotated[
        UndecidedPolicy | None,
        typer.Option(help="Exit for UNDECIDED: undecided (3), fail (1) or pass (0) [default: undecided]."),
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
    try:
        settings = load_gate_config(config) if config else None
        checks = (settings.checks if settings else []) + _cli_checks(metric or [], max_drop or [], domain)
        policy = undecided or (settings.undecided if settings else None) or UndecidedPolicy.UNDECIDED
        level = confidence or (settings.confidence if settings else None) or 0.95
        base, cand = load_summary(baseline, db), load_summary(candidate, db)
        problems = comparability_problems(base, cand)
        if problems and not force:
            raise GateError("runs are not comparable: " + "; ".join(problems) + " (--force to gate anyway)")
        result = run_gate(base, cand, checks, level)
    except (GateError, SourceError) as exc:
        fail(exc, label="gate error (exit 2)")
    console.print(gate_panel(result, policy))
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(gate_markdown(result, policy))
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(gate_junit(result, policy))
    raise typer.Exit(result.exit_code(policy))
