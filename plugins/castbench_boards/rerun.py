"""Re-creating a board's runs from its entries' recipes (`castbench leaderboard build --rerun`).

Each entry with a `policy` is run again offline on the board's domains, split and trials, with
the entry's seed, in a throwaway database, and exported to the entry's run file; on a board with
a `profile`, also under each of its perturbations, and the entry's profile written next to it. Entries
without a recipe (submitted runs) are left as they are. The board built next marks only the
runs re-created here as re-run.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from castbench._records.store import ResultsStore
from castbench._records.store.export import ExportedRun, export_run, read_export, write_export
from castbench._results.publish.board import BoardError, BoardSpec, Entry, use_private_split
from castbench._run.api import evaluate
from castbench_boards.profile import write_entry_profile

__all__ = ["rerun_entries"]


def rerun_entries(
    spec: BoardSpec, root: Path, on_entry: Callable[[Entry, Path, int], None] | None = None
) -> dict[str, ExportedRun]:
    """Run every entry that has a recipe and export it; returns the runs re-created, by entry
    name, as written (what `build_board(reruns=...)` marks re-run)."""
    if spec.entries is None:
        raise BoardError(f"board {spec.name} lists no entries: nothing to re-create")
    use_private_split(spec, root)
    written: dict[str, ExportedRun] = {}
    with tempfile.TemporaryDirectory(prefix="castbench-rerun-") as scratch:
        db = f"sqlite:///{Path(scratch) / 'runs.db'}"
        for entry in spec.entries:
            if entry.policy is None:
                continue
            recipe: dict[str, Any] = dict(
                db=db,
                fresh=True,
                domains=",".join(sorted(spec.domains)),
                policy=entry.policy,
                critic=entry.critic,
                user=entry.user,
                split=spec.split,
                trials=spec.trials,
                seed=entry.seed,
            )
            if spec.grading is not None:
                recipe["grading"] = spec.grading
            result = evaluate(**recipe)
            path = root / entry.run_path(spec.name)
            size = write_export(export_run(ResultsStore(db), result.outcome.run_id), path)
            if spec.profile is not None:  # the same recipe under each perturbation: robustness
                store = ResultsStore(db)
                perturbed = {}
                for name, perturbations in spec.profile.conditions().items():
                    run = evaluate(**recipe, perturbations=perturbations).outcome.run_id
                    perturbed[name] = (perturbations.label(), store.trials(run))
                write_entry_profile(spec, entry, root, store.trials(result.outcome.run_id), perturbed)
            written[entry.name] = read_export(path)  # as the file holds it (durations rounded)
            if on_entry is not None:
                on_entry(entry, path, size)
    return written
