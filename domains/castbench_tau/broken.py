"""`python -m castbench_tau.broken`: the table of broken published tasks for this pack's README,
one row per task with the classes of what went wrong (`castbench_tau.gold`), then the count of
tasks per class (a test checks the README against what the packs find)."""

from __future__ import annotations

import re
from collections import Counter

from castbench.domain import load_domain
from castbench_tau.gold import BROKEN_CLASSES
from castbench_tau.source import DOMAINS


def _classes(reasons: list[str]) -> list[str]:
    return [kind for kind in BROKEN_CLASSES if any(reason.startswith(f"{kind}: ") for reason in reasons)]


def table() -> str:
    lines = ["| pack | task | class | what happened in τ's tools |", "|---|---|---|---|"]
    counts: Counter[str] = Counter()
    for name in DOMAINS:
        domain = load_domain(f"tau-{name}")
        for task_id, reasons in domain.broken.items():  # type: ignore[attr-defined]
            classes = _classes(reasons)
            counts.update(classes)
            why = "; ".join(re.sub(r"\. Available tools: .*", "", reason) for reason in reasons)
            why = why.replace("|", "\\|")
            lines.append(f"| tau-{name} | {task_id} | {', '.join(classes)} | {why} |")
    lines.append("")
    lines.append(
        "Tasks per class (a task may have several): "
        + ", ".join(f"{kind} {counts[kind]}" for kind in BROKEN_CLASSES)
        + "."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
