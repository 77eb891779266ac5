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
    assert "| Qwen3-32B (paper) | CAST 8B | average of 4 τ sets | – | – | 19.5 | 11.4 | 64.7 |" in reported
    assert "Qwen3-32B (paper)" not in text.split("Reported by the CAST paper")[0]
    assert json.loads((out / "board.json").read_text())["reported"] == [r.model_dump() for r in REPORTED]


def test_grid_checkpoints_are_served_with_shares_that_fit_one_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy and critic checkpoints of one cell run together beside the teacher/user and
    base servers: each takes its `[paper]` share, never vLLM's 0.9, and answers at the length
    it was trained to write."""
    from types import SimpleNamespace

    import castbench._run.api
    from castbench_cast import paper as paper_module
    from castbench_cast import serving
    from castbench_cast.context import ContextRule
    from castbench_cast.pipeline import Pipeline

    served: list[tuple[str, float | None, int]] = []

    class Recorder(serving.CheckpointServer):
        def __enter__(self) -> Recorder:
            served.append((self.path.parent.name, self.gpu_memory, self.answer_tokens))
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    headline = SimpleNamespace(pass_hat={1: 0.5})
    result = SimpleNamespace(
        summary=SimpleNamespace(headline=headline, overall=SimpleNamespace(critic=None)),
        outcome=SimpleNamespace(run_id="r-1"),
    )
    monkeypatch.setattr(serving, "CheckpointServer", Recorder)
    monkeypatch.setattr(castbench._run.api, "evaluate", lambda **options: result)
    recipe = load_recipe(RECIPES / "paper.toml").model_copy(update={"out": tmp_path})
    for name in ("train-policy", "train-critic"):
        (tmp_path / name / "model").mkdir(parents=True)
    ContextRule(max_length=8192, max_completion=512).save(tmp_path / "train-policy" / "model")
    ContextRule(max_length=8192, max_completion=256).save(tmp_path / "train-critic" / "model")
    settings = recipe.paper
    assert settings is not None
    paper_module._cell(
        Pipeline(recipe),
        settings,
        ("CAST", tmp_path / "train-policy" / "model"),
        ("trained", tmp_path / "train-critic" / "model"),
        "tau-retail",
    )
    assert served == [
        ("train-policy", settings.policy_gpu_memory, 512),
        ("train-critic", settings.critic_gpu_memory, 256),
    ]
    assert round(settings.policy_gpu_memory + settings.critic_gpu_memory + 0.4 + 0.15, 6) <= 0.95


def test_a_served_critic_cut_shorter_than_it_was_trained_is_refused(tmp_path: Path) -> None:
    from castbench_cast.recipe import RecipeError

    text = (
        (RECIPES / "paper.toml")
        .read_text()
        .replace("rounds = 3\nserve", "rounds = 3\nmax_tokens = 128\nserve", 1)
    )
    (tmp_path / "paper.toml").write_text(text)
    with pytest.raises(
        RecipeError, match="collect_critic.max_tokens 128 is below train_critic.max_completion 256"
    ):
        load_recipe(tmp_path / "paper.toml")


def test_the_board_counts_unreadable_verdicts_and_sets_each_critic_beside_its_baselines() -> None:
    from castbench_cast.baselines import BaselineFigures
    from castbench_cast.paper import CriticCell, Row, render

    row = Row(
        policy="base",
        critic="trained",
        domain="tau-retail",
        source="measured",
        flag_valid=0.1,
        verdicts=40,
        unreadable=3,
        run_id="r-1",
    )
    figures = [
        BaselineFigures(
            name=name,
            calls=40,
            mcc=mcc,
            mcc_ci=(mcc - 0.1, mcc + 0.1),
            false_flag_rate=0.2,
            false_flag_rate_ci=(0.1, 0.3),
            detection_rate=0.5,
            flag_share_of_actions=0.1,
        )
        for name, mcc in (("trained critic", 0.6), ("majority per tool", 0.3))
    ]
    text = render(
        Board(
            recipe="x",
            rows=[row],
            critics=[CriticCell(policy="base", domain="tau-retail", run_id="r-1", figures=figures)],
        )
    )
    measured = text.split("Reported by the CAST paper")[0]
    assert "| unreadable (as pass) |" in measured and "| 40 | 3 | r-1 |" in measured
    assert "flag ∧ valid % |" in measured and "of all labelled actions" in measured  # as the paper's 13.6%
    for column in ("pass^3 %", "pass^4 %", "flag ∧ invalid %", "pass ∧ invalid %", "flag rate %"):
        assert f"| {column} |" in measured
    assert "| resistance % (paper) | correction % (paper) |" in measured
    assert "| resistance % (castbench: false flags) | correction % (castbench: all true flags) |" in measured
    assert "| base | tau-retail | majority per tool | 40 | 0.300 [0.200, 0.400] |" in measured


def test_resistance_and_correction_follow_the_papers_definitions_beside_castbenchs() -> None:
    """The paper's resistance is over every rejection the policy answered; its correction over the
    true flags the policy answered (a last-round flag cannot be corrected). castbench's own
    variants count false flags only, and every true flag."""
    from castbench._results.report.critic_report import FlagReactions
    from castbench_cast.paper import paper_reactions

    reactions = FlagReactions(
        false_flags_answered=10, kept=3, true_flags=20, true_flags_answered=15, insisted=2, corrected=12
    )
    resistance, correction = paper_reactions(reactions)
    assert resistance == (3 + 2) / (10 + 15) and correction == 12 / 15
    assert reactions.resistance_rate == 3 / 10 and reactions.correction_rate == 12 / 20
    assert paper_reactions(FlagReactions()) == (None, None)
