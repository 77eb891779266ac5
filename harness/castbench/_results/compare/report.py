"""Rich tables of a comparison (what `castbench compare` prints)."""

from __future__ import annotations

from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from castbench._results.compare.runs import Comparison, DomainComparison

__all__ = ["comparison_renderables"]

_SHOWN_TASKS = 12


def _direction(low: float, high: float) -> Text:
    if high < 0:
        return Text("▼ credibly worse", "red")
    if low > 0:
        return Text("▲ credibly better", "green")
    return Text("≈ no credible change", "dim")


def _tasks(ids: list[str]) -> str:
    shown = ", ".join(ids[:_SHOWN_TASKS])
    return shown + (f" … (+{len(ids) - _SHOWN_TASKS})" if len(ids) > _SHOWN_TASKS else "")


def _domain(item: DomainComparison, confidence: float) -> list[RenderableType]:
    table = Table(
        title=escape(f"{item.domain}: {item.shared_tasks} shared tasks, ")
        + f"candidate − baseline ({confidence:.0%} paired CI)",
        title_justify="left",
    )
    for column in ("metric", "baseline", "candidate", "difference", "interval", ""):
        table.add_column(
            column, justify="right" if column in ("baseline", "candidate", "difference") else "left"
        )
    for paired in item.pass_hat:
        table.add_row(
            paired.metric,
            f"{paired.baseline:.3f}",
            f"{paired.candidate:.3f}",
            f"{paired.difference:+.3f}",
            f"[{paired.low:+.3f}, {paired.high:+.3f}]",
            _direction(paired.low, paired.high),
        )
    out: list[RenderableType] = [table]
    out.append(
        Text.assemble(
            ("reliable → unreliable ", "red"),
            f"({len(item.became_unreliable)}): {_tasks(item.became_unreliable) or '–'}",
        )
    )
    out.append(
        Text.assemble(
            ("unreliable → reliable ", "green"),
            f"({len(item.became_reliable)}): {_tasks(item.became_reliable) or '–'}",
        )
    )
    for side, ids in (("baseline", item.only_baseline), ("candidate", item.only_candidate)):
        if ids:
            out.append(Text(f"scored only in the {side} (left out): {_tasks(ids)}", "yellow"))
    if item.critic:
        critic = Table(title=escape(f"{item.domain}: critic (rates, no interval)"), title_justify="left")
        for column in ("rate", "baseline", "candidate", "difference"):
            critic.add_column(column)
        for delta in item.critic:
            critic.add_row(
                delta.rate.replace("_", " "),
                f"{delta.baseline:.3f}",
                f"{delta.candidate:.3f}",
                f"{delta.difference:+.3f}",
            )
        out.append(critic)
    if item.attribution:
        blame = Table(title=escape(f"{item.domain}: whose fault (shares, no interval)"), title_justify="left")
        for column in ("share", "baseline", "candidate", "difference"):
            blame.add_column(column)
        for delta in item.attribution:
            blame.add_row(
                delta.rate, f"{delta.baseline:.3f}", f"{delta.candidate:.3f}", f"{delta.difference:+.3f}"
            )
        out.append(blame)
    return out


def comparison_renderables(comparison: Comparison) -> list[RenderableType]:
    out: list[RenderableType] = [
        Text(f"baseline  {comparison.baseline}\ncandidate {comparison.candidate}", style="bold")
    ]
    for item in [*comparison.domains, *([comparison.overall] if comparison.overall else [])]:
        out += _domain(item, comparison.confidence)
    return out
