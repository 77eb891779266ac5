"""A trait sweep: the same evaluation under several user trait profiles, against the no-trait
baseline, as τ-Trait reports it (the drop in pass^k per trait)."""

from __future__ import annotations

from pydantic import BaseModel
from rich.markup import escape
from rich.table import Table

from castbench._results.report.summary import RunSummary

__all__ = ["TraitSweep", "sweep_table", "trait_sweep"]


class ProfileResult(BaseModel):
    run_id: str
    pass_hat: dict[int, float]
    drop: dict[int, float]
    """Baseline pass^k minus this profile's pass^k (positive: the trait hurts)."""


class TraitSweep(BaseModel):
    baseline_run_id: str
    baseline: dict[int, float]
    profiles: dict[str, ProfileResult]


def trait_sweep(baseline: RunSummary, runs: dict[str, RunSummary]) -> TraitSweep:
    base = baseline.overall.pass_hat
    return TraitSweep(
        baseline_run_id=baseline.run_id,
        baseline=base,
        profiles={
            profile: ProfileResult(
                run_id=summary.run_id,
                pass_hat=summary.overall.pass_hat,
                drop={k: base[k] - value for k, value in summary.overall.pass_hat.items() if k in base},
            )
            for profile, summary in runs.items()
        },
    )


def sweep_table(sweep: TraitSweep) -> Table:
    ks = sorted(sweep.baseline)
    shown = [k for k in ks if k in (1, 2, 4, ks[-1])]
    table = Table(title="trait sweep: overall pass^k and its drop against no traits", title_justify="left")
    table.add_column("user traits", style="bold")
    for k in shown:
        table.add_column(f"pass^{k}", justify="right")
        table.add_column(f"Δ pass^{k}", justify="right")
    table.add_row("(none)", *[cell for k in shown for cell in (f"{sweep.baseline[k]:.3f}", "")])
    for profile, result in sweep.profiles.items():
        table.add_row(
            escape(profile),
            *[cell for k in shown for cell in (f"{result.pass_hat[k]:.3f}", f"{-result.drop[k]:+.3f}")],
        )
    return table
