"""`castbench runs why`: a run's failures grouped by cause, one example each, so a team reads ten
causes rather than a thousand transcripts; and the flat rows `--json` prints."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from castbench.attribution.model import Attribution

__all__ = ["why_rows", "why_table"]


def why_rows(
    attributions: Sequence[Attribution], judged: Sequence[Attribution] | None = None
) -> list[dict[str, Any]]:
    """One object per trial that did not pass: task, trial, step, party, cause, and the evidence;
    with a judge, what it said beside them."""
    rows = []
    for position, item in enumerate(attributions):
        row: dict[str, Any] = {
            "domain": item.domain,
            "task": item.task,
            "trial": item.trial,
            "step": item.step,
            "party": item.party,
            "cause": item.cause,
            "rule": item.evidence.rule,
            "detail": item.evidence.detail,
            "evidence_steps": item.evidence.steps,
            "diff": [d.model_dump(mode="json") for d in item.evidence.diff],
        }
        if judged is not None:
            other = judged[position]
            row["judge"] = {
                "step": other.step,
                "party": other.party,
                "cause": other.cause,
                "reason": other.evidence.detail,
            }
        rows.append(row)
    return rows


def why_table(attributions: Sequence[Attribution], title: str) -> Table:
    groups: dict[str, list[Attribution]] = defaultdict(list)
    for item in attributions:
        groups[item.cause].append(item)
    total = len(attributions) or 1
    table = Table(title=escape(title), title_justify="left")
    for column in ("cause", "party", "trials", "share", "example (task #trial @step: evidence)"):
        table.add_column(column, overflow="fold")
    for cause, items in sorted(groups.items(), key=lambda group: (-len(group[1]), group[0])):
        first = items[0]
        where = f"{first.domain} {first.task} #{first.trial} @{'–' if first.step is None else first.step}"
        table.add_row(
            cause,
            first.party,
            str(len(items)),
            f"{len(items) / total:.0%}",
            escape(f"{where}: {first.evidence.rule}: {first.evidence.detail}"[:300]),
        )
    return table
