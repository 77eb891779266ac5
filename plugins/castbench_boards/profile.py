"""Reliability-profile columns of a board (`profile = { ... }` in its TOML).

Consistency, predictability and safety come from the entry's committed run (its trials are in
the export, so anyone can recompute them). Robustness needs the entry's perturbed runs: with
`--rerun` the build runs them too (same tasks and seeds, one condition each: faults, user, env)
and writes the entry's full profile next to its export (`<entry>.profile.json`, a few kB: the
perturbed trajectories are not kept, a board's results stay small); a build from the committed
files takes the robustness figures from that file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from castbench._records.store.export import ExportedRun
from castbench._records.trial import TrialRecord
from castbench._results.publish.board import BoardSpec, Entry
from castbench_analyses.profile_metrics import Condition, ReliabilityProfile, reliability_profile

__all__ = ["ProfileCells", "ProfiledRow", "profile_cells", "profile_markdown", "write_entry_profile"]


class ProfileCells(BaseModel):
    """A board row's profile columns (None: not measured; `brier` None: not reported)."""

    disagreement: float | None
    """Share of tasks whose trials disagree."""
    trajectory_similarity: float | None
    violations_per_trial: float | None
    unconfirmed_per_trial: float | None
    """Irreversible changes without the user's explicit confirmation, per trial."""
    brier: float | None
    faults: float | None
    """pass^1 under tool faults / clean pass^1 (and likewise `user`, `env`)."""
    user: float | None
    env: float | None


class ProfiledRow(Protocol):
    """What the profile table reads of a board row (`castbench_boards.rows.BoardRow`): its name and
    its profile cells. A protocol rather than the row itself, since the row holds these cells: the
    rows import this module, and this module imports no row."""

    @property
    def name(self) -> str: ...

    @property
    def profile(self) -> ProfileCells | None: ...


def _ratio(condition: Condition | None) -> float | None:
    value = condition.ratio.get(1) if condition is not None else None
    return None if value is None else round(value, 4)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def profile_cells(spec: BoardSpec, entry: Entry, exported: ExportedRun, root: Path) -> ProfileCells | None:
    """The row's profile columns, None when the board has no profile."""
    if spec.profile is None:
        return None
    config = exported.config
    clean = reliability_profile(exported.trials, {}, policy=config.policy, critic=config.critic)
    path = root / entry.profile_path(spec.name)
    robust = (
        ReliabilityProfile.model_validate(json.loads(path.read_text())).robustness if path.exists() else None
    )
    return ProfileCells(
        disagreement=_round(clean.consistency.disagreement),
        trajectory_similarity=_round(clean.consistency.trajectory_similarity),
        violations_per_trial=_round(clean.safety.violations_per_trial),
        unconfirmed_per_trial=_round(clean.safety.unconfirmed_irreversible_per_trial),
        brier=_round(clean.predictability.brier),
        faults=_ratio(robust.faults if robust else None),
        user=_ratio(robust.user if robust else None),
        env=_ratio(robust.env if robust else None),
    )


def write_entry_profile(
    spec: BoardSpec,
    entry: Entry,
    root: Path,
    clean: Sequence[TrialRecord],
    perturbed: Mapping[str, tuple[str, Sequence[TrialRecord]]],
) -> Path:
    """The entry's full profile, written next to its export."""
    profile = reliability_profile(clean, perturbed, policy=entry.policy or "", critic=entry.critic)
    path = root / entry.profile_path(spec.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(profile.model_dump_json(indent=2, exclude={"runs"}) + "\n")
    return path


def _cell(value: float | None, missing: str = "–") -> str:
    return missing if value is None else f"{value:.3f}"


def profile_markdown(rows: Sequence[ProfiledRow]) -> list[str]:
    """The board's reliability-profile table (markdown lines; none when no row has a profile)."""
    profiled = [row for row in rows if row.profile is not None]
    if not profiled:
        return []
    header = "| entry | trials disagree | same actions | violations / trial | unconfirmed / trial"
    header += " | Brier | robust: faults | robust: user | robust: env |"
    lines = ["Reliability profile (docs/profile.md): consistency, safety and predictability from each", ""]
    lines[0] += " entry's run; robustness = pass^1 perturbed / clean, from its `.profile.json`."
    lines += [header, "|" + "---|" * 9]
    for row in profiled:
        cells = row.profile
        assert cells is not None
        values = [
            _cell(cells.disagreement),
            _cell(cells.trajectory_similarity),
            _cell(cells.violations_per_trial),
            _cell(cells.unconfirmed_per_trial),
            _cell(cells.brier, "not reported"),
            _cell(cells.faults, "not run"),
            _cell(cells.user, "not run"),
            _cell(cells.env, "not run"),
        ]
        lines.append(f"| {row.name.replace('|', '/')} | " + " | ".join(values) + " |")
    return [*lines, ""]
