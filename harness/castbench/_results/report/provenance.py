"""A run's provenance on the console: one line for where it came from and where its agents ran,
one for how it executed (where its trials ran, how each agent was called), then one marked line
for each thing that makes its figures something other than an entry (a privileged role, an agent
in castbench's process, trials not isolated from each other, an agent outside castbench's
sandbox, a worker without the sandbox)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from castbench._records.provenance import Provenance

__all__ = ["print_provenance", "provenance_lines"]


def provenance_lines(provenance: Provenance) -> list[str]:
    """Rich-markup lines, the plain provenance line first."""
    lines = [escape(provenance.line()), escape(provenance.execution_line())]
    for role in provenance.privileged:
        lines.append(
            f"[bold yellow]{role} privileged:[/] reads the ground truth — an upper bound, not an entry"
        )
    for role in provenance.roles("in-process"):
        lines.append(
            f"[bold yellow]{role} in castbench's process (--in-process):[/] it could read the ground "
            "truth; boards refuse the run"
        )
    if provenance.execution is not None and not provenance.isolated_trials:
        lines.append(
            f"[bold yellow]trial isolation {escape(provenance.trial_isolation)}:[/] nothing keeps it "
            "from carrying memory from one trial to the next; boards that set require_isolated_trials "
            "refuse the run"
        )
    for role in provenance.outside_castbench:
        lines.append(
            f"[bold yellow]{role} ran outside castbench's sandbox:[/] an agent service reads what its "
            "machine holds; boards mark the row and refuse it where allow_outside_castbench = false"
        )
    for role, placement in provenance.agents.items():
        if placement.where == "sandboxed" and placement.needs is not None and not placement.needs.empty:
            opened = placement.unsandboxed_for
            lines.append(
                f"[bold yellow]{role} declared needs:[/] {escape(placement.needs.summary())} "
                "(let through its sandbox; boards refuse what their allow-lists do not name)"
                + (f"; recorded as unsandboxed for {', '.join(opened)}" if opened else "")
            )
    unsandboxed = provenance.unsandboxed
    if unsandboxed:
        reasons = sorted({provenance.agents[role].detail for role in unsandboxed})
        lines.append(
            f"[bold yellow]no sandbox:[/] {escape('; '.join(reasons))}; the run is recorded as unsandboxed "
            f"({', '.join(unsandboxed)}), which boards refuse unless they set allow_unsandboxed"
        )
    return lines


def print_provenance(provenance: Provenance, console: Console) -> None:
    """The provenance lines, wrapped between words on a terminal (readable at 80 columns); one
    line each where the output is a file or a pipe, for whoever greps it."""
    for line in provenance_lines(provenance):
        console.print(line, soft_wrap=not console.is_terminal)
