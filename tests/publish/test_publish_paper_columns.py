"""The cast-paper board's CAST-paper columns (`paper_columns = true`, issue #57): the four
confusion shares, resistance and correction as the paper defines them, and castbench's variants
beside them, each named; boards that do not ask for them are unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from castbench._records.store.export import read_export
from castbench._results.publish.board import load_board
from castbench._results.report.critic_report import FlagReactions, critic_report
from castbench_boards.render import PAPER_COLUMNS
from castbench_boards.rows import _critic_cells, paper_reactions

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "results" / "cast-paper" / "noisy-p-0-3-rules-critic.castbench.json.gz"


def test_paper_reactions_follow_the_papers_definitions() -> None:
    # 10 false flags answered (6 kept), 20 true flags of which 15 answered (3 insisted, 9 corrected)
    reactions = FlagReactions(
        false_flags_answered=10, kept=6, true_flags=20, true_flags_answered=15, insisted=3, corrected=9
    )
    resistance, correction = paper_reactions(reactions)
    assert resistance == pytest.approx((6 + 3) / (10 + 15))  # over every rejection answered
    assert correction == pytest.approx(9 / 15)  # over the true flags that could be corrected
    assert reactions.resistance_rate == pytest.approx(6 / 10)  # castbench's: false flags only
    assert reactions.correction_rate == pytest.approx(9 / 20)  # castbench's: every true flag
    assert paper_reactions(FlagReactions()) == (None, None)


def test_the_plugin_and_the_board_define_them_alike() -> None:
    paper = pytest.importorskip("castbench_cast.paper")
    reactions = FlagReactions(
        false_flags_answered=4, kept=1, true_flags=9, true_flags_answered=7, insisted=2, corrected=5
    )
    assert paper.paper_reactions(reactions) == paper_reactions(reactions)


@pytest.mark.extra("tau")
def test_the_committed_cast_paper_board_shows_the_papers_columns() -> None:
    spec = load_board(REPO / "leaderboards" / "cast-paper.toml")
    assert spec.paper_columns and {m.name for m in spec.metrics} >= {"pass^1", "pass^3", "pass^4"}
    trials = read_export(RUN).trials
    cells = _critic_cells(trials, paper=True)
    assert cells is not None and cells.paper is not None
    report = critic_report(trials)
    assert report is not None and report.confusion is not None
    paper = cells.paper
    shares = (paper.flag_valid, paper.pass_valid, paper.flag_invalid, paper.pass_invalid)
    assert all(share is not None for share in shares)
    assert sum(shares) == pytest.approx(1.0, abs=1e-3)  # type: ignore[arg-type]
    resistance, correction = paper_reactions(report.reactions)
    assert (paper.resistance, paper.correction) == (round(resistance, 4), round(correction, 4))  # type: ignore[arg-type]
    assert paper.resistance_castbench == round(report.resistance_rate, 4)  # type: ignore[arg-type]
    assert paper.resistance != paper.resistance_castbench and paper.correction != cells.correction_rate
    # the committed files show them, each named
    lines = (REPO / "leaderboards" / "cast-paper" / "board.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| # |")).split(" | ")
    for _, label in PAPER_COLUMNS:
        assert label in header
    assert "correction rate (castbench: all true flags)" in header
    row = next(line for line in lines if "`rules`" in line).split(" | ")
    assert row[header.index("resistance (paper)")] == f"{paper.resistance:.3f}"
    assert row[header.index("flag ∧ valid")] == f"{paper.flag_valid:.3f}"
    board = json.loads((REPO / "leaderboards" / "cast-paper" / "board.json").read_text())
    rules = next(r for r in board["rows"] if r["critic"] == "rules")
    assert rules["critic_figures"]["paper"] == paper.model_dump()
    assert "resistance_castbench" in (REPO / "leaderboards" / "cast-paper" / "board.csv").read_text()


def test_a_board_that_does_not_ask_keeps_its_columns() -> None:
    spec = load_board(REPO / "leaderboards" / "scripted-baselines.toml")
    assert not spec.paper_columns
    board = json.loads((REPO / "leaderboards" / "scripted-baselines" / "board.json").read_text())
    critics = [r["critic_figures"] for r in board["rows"] if r.get("critic_figures")]
    assert critics and all("paper" not in figures for figures in critics)
    assert "resistance (paper)" not in (REPO / "leaderboards" / "scripted-baselines" / "board.md").read_text()
