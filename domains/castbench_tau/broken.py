"""`python -m castbench_tau.broken`: the table of broken published tasks for this pack's README
(a test checks the README against what the packs find)."""

from __future__ import annotations

import re

from castbench.domain import load_domain
from castbench_tau.source import DOMAINS


def table() -> str:
    lines = ["| pack | task | why its gold is broken |", "|---|---|---|"]
    for name in DOMAINS:
        domain = load_domain(f"tau-{name}")
        for task_id, reasons in domain.broken.items():  # type: ignore[attr-defined]
            why = "; ".join(re.sub(r"\. Available tools: .*", "", reason) for reason in reasons)
            why = why.replace("|", "\\|")
            lines.append(f"| tau-{name} | {task_id} | {why} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
