"""What a critic's verdicts were worth, from counterfactual branches (`castbench_analyses.counterfactual`).

Each verdict is counted by what it did against its branch: it *saved* the trial (the trial
succeeded, the branch with the other verdict failed), *cost* it (the other way round), or changed
nothing. Counts are kept per cell of the confusion matrix (a flag of an invalid action is a true
flag, of a valid one a false flag; a pass of an invalid action a miss), so a reader sees which
false flags did harm and which misses let an action through that ended a trial.

The headline is **net trials saved per 100 verdicts**, (saved - cost) / verdicts x 100, for flags,
for passes and for all verdicts, with a percentile bootstrap interval that resamples *tasks* (as
every castbench interval does, `castbench._records.metrics.intervals`): each resample sums the tasks'
saved, cost and verdict counts and takes the ratio. Branches that ended unscored are left out of
the counts and of the verdicts. The effects of a trial's verdicts are measured one at a time, each
against the trial as it ran: they are not additive (two flags that each saved the trial may have
saved it together once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from castbench._records.metrics.intervals import DEFAULT_RESAMPLES
from castbench_analyses.branches import TrialBranches

__all__ = ["CELLS", "CounterfactualSummary", "EffectCounts", "NetSaved", "summarize_branches"]

Cell = Literal["true_flag", "false_flag", "unlabelled_flag", "miss", "true_pass", "unlabelled_pass"]
CELLS: dict[tuple[bool, str | None], Cell] = {
    (True, "invalid"): "true_flag",
    (True, "valid"): "false_flag",
    (True, "unknown"): "unlabelled_flag",
    (True, None): "unlabelled_flag",
    (False, "invalid"): "miss",
    (False, "valid"): "true_pass",
    (False, "unknown"): "unlabelled_pass",
    (False, None): "unlabelled_pass",
}
"""(the verdict flagged, the labeler's truth) -> its cell of the confusion matrix."""


class EffectCounts(BaseModel):
    saved: int = 0
    cost: int = 0
    unchanged: int = 0
    """Changed nothing: the branch ended as the trial did (or the other verdict would have done the
    same: a verdict in the last round of a run that executes an exhausted proposal anyway)."""
    unscored: int = 0
    """Branches that ended unscored: left out of every figure."""

    @property
    def verdicts(self) -> int:
        return self.saved + self.cost + self.unchanged


class NetSaved(BaseModel):
    """Net trials saved per 100 verdicts, with its task-bootstrap interval (None without verdicts)."""

    point: float | None
    low: float | None
    high: float | None


class CounterfactualSummary(BaseModel):
    tasks: int
    trials: int
    flags: EffectCounts
    passes: EffectCounts
    cells: dict[Cell, EffectCounts]
    net_flags: NetSaved
    net_passes: NetSaved
    net_all: NetSaved
    level: float
    resamples: int


def _net(
    saved: list[int], cost: list[int], verdicts: list[int], resamples: int, seed: int, level: float
) -> NetSaved:
    total = sum(verdicts)
    if not total:
        return NetSaved(point=None, low=None, high=None)
    import numpy as np

    gain = np.asarray(saved, dtype=np.float64) - np.asarray(cost, dtype=np.float64)
    counts = np.asarray(verdicts, dtype=np.float64)
    point = 100 * float(gain.sum()) / total
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, len(counts), size=(resamples, len(counts)))
    denominators = counts[drawn].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = 100 * gain[drawn].sum(axis=1) / denominators
    defined = ratios[denominators > 0]
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail])
    return NetSaved(point=point, low=float(low), high=float(high))


def summarize_branches(
    trials: Sequence[TrialBranches], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = 0.95
) -> CounterfactualSummary:
    """The per-critic figures of a run's branches (see the module's docstring)."""
    if resamples < 1 or not 0 < level < 1:
        raise ValueError(f"need resamples >= 1 and 0 < level < 1, got {resamples}, {level}")
    cells: dict[Cell, EffectCounts] = {cell: EffectCounts() for cell in dict.fromkeys(CELLS.values())}
    flags, passes = EffectCounts(), EffectCounts()
    per_task: dict[tuple[str, str], list[list[int]]] = {}  # [flag, pass] x [saved, cost, verdicts]
    for trial in trials:
        rows = per_task.setdefault((trial.domain, trial.task_id), [[0, 0, 0], [0, 0, 0]])
        for branch in trial.branches:
            flagged = branch.point.flagged
            for counts in (cells[CELLS[flagged, branch.point.label]], flags if flagged else passes):
                setattr(counts, branch.effect, getattr(counts, branch.effect) + 1)
            if branch.effect != "unscored":
                row = rows[0 if flagged else 1]
                row[0] += branch.effect == "saved"
                row[1] += branch.effect == "cost"
                row[2] += 1
    ordered = [per_task[key] for key in sorted(per_task)]

    def net(which: Sequence[int]) -> NetSaved:
        saved, cost, verdicts = (
            [sum(rows[kind][field] for kind in which) for rows in ordered] for field in range(3)
        )
        return _net(saved, cost, verdicts, resamples, seed, level)

    return CounterfactualSummary(
        tasks=len(per_task),
        trials=len(trials),
        flags=flags,
        passes=passes,
        cells=cells,
        net_flags=net([0]),
        net_passes=net([1]),
        net_all=net([0, 1]),
        level=level,
        resamples=resamples,
    )
