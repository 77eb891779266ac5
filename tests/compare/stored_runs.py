"""Real runs of the scripted noisy policy for the comparison and gate tests (see conftest)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from castbench._results.report.summary import RUN_SUMMARY, RunSummary
from castbench._run.api import evaluate
from tests.support import sqlite_url

SMALL_TASKS = ["retail-test-0001", "retail-test-0002", "retail-test-0003"]


@dataclass(frozen=True)
class StoredRun:
    run_id: str
    summary: RunSummary
    path: Path
    """The run's summary JSON, as `castbench eval --output` writes it."""


@dataclass(frozen=True)
class Runs:
    db: str
    low_noise: StoredRun
    """scripted:noisy?p=0.05, seed 0."""
    low_noise_other_seed: StoredRun
    """The same policy, seed 1."""
    high_noise: StoredRun
    """scripted:noisy?p=0.25, seed 0: a real regression."""
    tiny_low: StoredRun
    """3 tasks × 2 trials of p=0.05."""
    tiny_high: StoredRun
    """3 tasks × 2 trials of p=0.25."""


def make_runs(folder: Path) -> Runs:
    db = sqlite_url(folder / "runs.db")

    def run(name: str, policy: str, seed: int, trials: int = 8, tasks: list[str] | None = None) -> StoredRun:
        result = evaluate(db=db, domains="retail", policy=policy, trials=trials, seed=seed, tasks=tasks)
        path = folder / f"{name}.json"
        path.write_text(RUN_SUMMARY.dumps(result.summary, indent=2))  # as `eval --output` writes it
        return StoredRun(result.outcome.run_id, result.summary, path)

    return Runs(
        db=db,
        low_noise=run("low", "scripted:noisy?p=0.05", 0),
        low_noise_other_seed=run("low-seed1", "scripted:noisy?p=0.05", 1),
        high_noise=run("high", "scripted:noisy?p=0.25", 0),
        tiny_low=run("tiny-low", "scripted:noisy?p=0.05", 0, trials=2, tasks=SMALL_TASKS),
        tiny_high=run("tiny-high", "scripted:noisy?p=0.25", 0, trials=2, tasks=SMALL_TASKS),
    )
