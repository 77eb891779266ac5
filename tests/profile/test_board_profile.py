"""Reliability-profile columns on a board: consistency, safety and predictability from the entry's
exported run, robustness from the `.profile.json` written next to it (here: from a perturbed run
on a few of its tasks, as `leaderboard build --rerun` writes it from full ones)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from castbench._records.perturbations import Perturbations
from castbench._records.store import ResultsStore
from castbench._results.publish.board import load_board
from castbench._run.api import evaluate
from castbench_boards.build import build_board
from castbench_boards.profile import write_entry_profile
from tests.publish.exports import Exports, exports  # noqa: F401 (the fixture)
from tests.publish.test_publish_provenance import HEADER
from tests.support import sqlite_url

BOARD = HEADER + 'allow_privileged = true\nprofile = { tool_faults = 0.5, user = "none", env = "none" }\n'
BOARD += 'entries = [{ name = "noisy", run = "results/noisy.castbench.json.gz", policy = "scripted:noisy" }]'
BOARD += "\n"


@pytest.mark.slow  # the exports fixture runs the whole retail split (shared with tests/publish)
def test_board_rows_carry_profile_columns(exports: Exports, tmp_path: Path) -> None:  # noqa: F811
    path = exports.root / "leaderboards" / "profiled.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(BOARD)
    spec = load_board(path)
    assert spec.profile is not None and list(spec.profile.conditions()) == ["faults"]
    [entry] = spec.entries or []
    build_board(spec, exports.root, tmp_path / "before")
    [row] = json.loads((tmp_path / "before" / "board.json").read_text())["rows"]
    cells = row["profile"]
    assert cells["faults"] is None and cells["brier"] is None  # not run yet; no confidence reported
    assert 0 <= cells["disagreement"] <= 1 and cells["violations_per_trial"] > 0  # noisy breaks rules
    db = sqlite_url(tmp_path / "perturbed.db")
    tasks = ["retail-test-0002", "retail-test-0004", "retail-test-0005", "retail-test-0006"]
    faults = spec.profile.conditions()["faults"]
    options = dict(db=db, domains="retail", policy="scripted:noisy", trials=2, tasks=tasks)
    clean, perturbed = evaluate(**options), evaluate(**options, perturbations=faults)
    store = ResultsStore(db)
    written = write_entry_profile(
        spec,
        entry,
        exports.root,
        store.trials(clean.outcome.run_id),
        {"faults": (faults.label(), store.trials(perturbed.outcome.run_id))},
    )
    assert written == exports.root / "results" / "noisy.profile.json"
    build_board(spec, exports.root, tmp_path / "after")
    [row] = json.loads((tmp_path / "after" / "board.json").read_text())["rows"]
    saved = json.loads(written.read_text())["robustness"]["faults"]
    assert row["profile"]["faults"] == round(saved["ratio"]["1"], 4) and row["profile"]["faults"] < 1
    assert row["profile"]["user"] is None
    markdown = (tmp_path / "after" / "board.md").read_text()
    assert "| entry | trials disagree |" in markdown and "| noisy |" in markdown
    page = (tmp_path / "after" / "index.html").read_text()
    assert "<h2>Reliability profile</h2>" in page and f"{row['profile']['faults']:.3f}" in page
    assert Perturbations.model_validate(faults.model_dump()).tool_faults == 0.5
