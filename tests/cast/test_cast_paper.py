"""The paper's experiment as one command: the recipe loads, and with the CPU stand-in recipe the
driver runs its first stages end to end, the grid cells those stages allow, and builds the board
with the paper's reported figures marked apart (issue #25)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from castbench_cast.paper import REPORTED, Board
from castbench_cast.recipe import load_recipe
from tests.support import invoke

RECIPES = Path(__file__).resolve().parents[2] / "plugins" / "castbench_cast" / "recipes"


def test_the_paper_recipe_is_the_papers_setup() -> None:
    recipe = load_recipe(RECIPES / "paper.toml")
    assert recipe.collect.domains == "tau-retail" and recipe.collect.split == "train"
    assert recipe.collect.samples == 5 and recipe.collect.temperature == 0.7
    assert "Qwen3-8B" in recipe.train_critic.model and recipe.collect_critic.rounds == 3
    assert recipe.paper is not None and recipe.paper.trials == 8
    assert recipe.paper.domains == ["tau-retail", "tau-airline", "tau-telecom", "tau-telehealth"]
    assert recipe.collect_critic.policy == recipe.collect.policy  # inherited


@pytest.mark.train
@pytest.mark.slow
def test_the_stand_in_runs_the_first_stages_and_builds_the_board(tmp_path: Path) -> None:
    shutil.copy(RECIPES / "paper-standin.toml", tmp_path / "paper.toml")
    result = invoke("cast", "paper", str(tmp_path / "paper.toml"), "--until", "train-critic")
    assert result.exit_code == 0, result.output
    out = tmp_path / "cast-paper-standin-out"
    board = Board.model_validate_json((out / "board.json").read_text())
    measured = [row for row in board.rows if row.source == "measured"]
    # the base policy's cells ran (alone and with the trained critic); RFT and CAST wait for training
    assert {(r.policy, r.critic, r.domain) for r in measured} == {
        ("base", c, d) for c in ("none", "trained") for d in ("tau-retail", "tau-telehealth")
    }
    assert all(r.run_id and r.pass_1 is not None for r in measured)
    waiting = [row for row in board.rows if row.source == "not run"]
    assert len(waiting) == 8 and all("needs the trained" in row.note for row in waiting)
    text = (out / "board.md").read_text()
    reported = text.split("Reported by the CAST paper")[1]
    assert "| Qwen3-32B (paper) | CAST 8B | average of 4 τ sets | – | 19.5 (4) | 11.4 | 64.7 |" in reported
    assert "Qwen3-32B (paper)" not in text.split("Reported by the CAST paper")[0]
    assert json.loads((out / "board.json").read_text())["reported"] == [r.model_dump() for r in REPORTED]
