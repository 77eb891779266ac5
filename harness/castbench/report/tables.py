"""Rich tables of a run's summary and of single trials (what `castbench eval` and `runs show`
print)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from castbench.report.summary import DomainReport, RunSummary
from castbench.runner.records import TrialRecord

__all__ = ["print_summary", "print_trial", "reliability_table"]


def _cell(value: float, interval: tuple[float, float] | None) -> str:
    if interval is None:
        return f"{value:.3f}"
    return f"{value:.3f} [dim]{interval[0]:.2f}–{interval[1]:.2f}[/dim]"


def _ks(n: int) -> list[int]:
    return list(range(1, n + 1))


def reliability_table(summary: RunSummary) -> Table:
    n = summary.overall.trials_per_task
    table = Table(title=f"pass^k (95% CI over tasks) — run {summary.run_id}", title_justify="left")
    table.add_column("domain", style="bold")
    table.add_column("tasks", justify="right")
    for k in _ks(n):
        table.add_column(f"pass^{k}", justify="right")
    table.add_column(f"pass@{n}", justify="right")
    rows: list[tuple[str, DomainReport]] = list(summary.domains.items())
    if len(rows) > 1:
        rows.append(("overall", summary.overall))
    for name, report in rows:
        table.add_row(
            name,
            str(report.n_tasks),
            *[_cell(report.pass_hat[k], report.ci95[k]) if k in report.pass_hat else "–" for k in _ks(n)],
            f"{report.pass_at.get(n, float('nan')):.3f}",
        )
    return table


def _details_table(summary: RunSummary) -> Table:
    table = Table(title="trials", title_justify="left")
    for column in ("domain", "trials", "steps/trial", "errored", "retried", "end reasons", "failures", "surface✓"):
        table.add_column(column)
    for name, report in summary.domains.items():
        table.add_row(
            name,
            str(report.n_trials),
            f"{report.steps_mean:.1f}",
            str(report.errored_trials),
            str(report.retried_trials),
            ", ".join(f"{k} {v}" for k, v in report.end_reasons.items()),
            ", ".join(f"{k} {v}" for k, v in report.failure_categories.items()) or "–",
            str(report.surface_success),
        )
    return table


def print_summary(summary: RunSummary, console: Console) -> None:
    console.print(reliability_table(summary))
    console.print(_details_table(summary))
    for warning in summary.warnings:
        console.print(f"[bold yellow]warning:[/] {warning}")


def print_trial(record: TrialRecord, console: Console) -> None:
    status = "[green]pass[/]" if record.passed else "[red]fail[/]"
    console.print(
        f"[bold]{record.domain} {record.task_id} #{record.trial_index}[/] {status} "
        f"end={record.end_reason} steps={len(record.steps)} seed={record.seed}"
    )
    console.print(f"  [cyan]user[/]: {record.opening}")
    for step in record.steps:
        for proposal in step.proposals:
            if proposal.verdict is None and len(step.proposals) == 1:
                continue
            verdict = proposal.verdict
            label = f" label={proposal.label.label}" if proposal.label else ""
            judged = f"{verdict.verdict} ({verdict.failure_type}) {verdict.explanation}" if verdict else "–"
            console.print(f"    [dim]round {proposal.round}: {_show(proposal.action)} → critic {judged}{label}[/]")
        if step.action is None:
            console.print("  [magenta]blocked[/] by the critic")
        else:
            console.print(f"  [magenta]agent[/]: {_show(step.action)}")
        observation = step.observation
        if observation is not None:
            who = "user" if observation.role == "user" else ("tool!" if getattr(observation, "error", False) else "tool")
            text = observation.text if observation.role == "user" else observation.content
            console.print(f"  [cyan]{who}[/]: {text[:300]}")
    if record.grade is not None and record.grade.diff:
        diff = Table(title="state diff (expected vs got)", title_justify="left")
        for column in ("table", "key", "field", "expected", "got"):
            diff.add_column(column)
        for item in record.grade.diff[:40]:
            diff.add_row(item.table, item.key, item.field, repr(item.expected), repr(item.got))
        console.print(diff)
    if record.grade is not None and record.grade.missing_outputs:
        console.print(f"  missing outputs: {record.grade.missing_outputs}")
    if record.error:
        console.print(f"  [red]error[/]: {record.error.splitlines()[0]}")


def _show(action: object) -> str:
    kind = getattr(action, "kind", "")
    if kind == "tool_call":
        return f"{action.name}({action.arguments})"  # type: ignore[attr-defined]
    if kind == "reply":
        return repr(action.text)  # type: ignore[attr-defined]
    return f"malformed: {getattr(action, 'reason', '')}"
