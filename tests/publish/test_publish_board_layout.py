"""The board read at a glance (issue 60): strict and critic figures beside pass^k, ids that never
break inside a word, provenance as a badge, one curve and band per entry, ties and ranks that are
not credibly different noted; and in headless Chromium at 1280 and 390 px, no sideways scroll."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from castbench._records.metrics import TaskOutcome, summarize_counts
from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run, write_export
from castbench._results.compare.comparability import comparability_number
from castbench._results.publish.board import load_board
from castbench._run.api import evaluate
from castbench.domain import resolve_domains
from castbench_boards.build import build_board
from castbench_boards.curve import curve_svg
from castbench_boards.render import Board, board_html, id_parts, short_id
from castbench_boards.rows import BoardRow, Cell, rank_rows
from tests.publish.exports import Exports
from tests.support import sqlite_url
from tests.viewer.browser import BrowserPage

RETAIL = comparability_number(resolve_domains("retail")[0].version)
LONG_IDS = {
    "policy": "team.agents.cancellation_bot:CancelBot?model=gpt-4.1-mini&temperature=0",
    "critic": "team.agents.cancellation_bot:CancelCritic?model=gpt-4.1-mini",
}
WIDTHS = (1280, 390)


@dataclass(frozen=True)
class BuiltBoard:
    out: Path
    """The built board's folder (index.html and its files)."""
    long_ids: Path
    """The same board's page with long policy and critic ids, as a team's own agents have."""
    data: dict


@pytest.fixture(scope="module")
def built(exports: Exports, tmp_path_factory: pytest.TempPathFactory) -> BuiltBoard:
    root = tmp_path_factory.mktemp("layout")
    (root / "results").mkdir()
    for path in (exports.oracle, exports.noisy):
        shutil.copy(path, root / "results" / path.name)
    db = sqlite_url(root / "runs.db")
    result = evaluate(db=db, domains="retail", policy="scripted:noisy", critic="rules", trials=2, seed=0)
    write_export(
        export_run(ResultsStore(db), result.outcome.run_id), root / "results" / "critic.castbench.json.gz"
    )
    board = root / "leaderboards" / "layout.toml"
    board.parent.mkdir()
    board.write_text(
        f'title = "Layout"\ndomains = {{ retail = {RETAIL} }}\ntrials = 2\nmetrics = ["pass^1", "pass^2"]\n'
        "allow_privileged = true\nentries = [\n"
        '  { name = "oracle", run = "results/oracle.castbench.json.gz" },\n'
        '  { name = "noisy a", run = "results/noisy.castbench.json.gz", note = "the same run: a tie" },\n'
        '  { name = "noisy b", run = "results/noisy.castbench.json.gz" },\n'
        '  { name = "noisy + rules", run = "results/critic.castbench.json.gz" },\n'
        "]\n"
    )
    out = root / "board"
    build_board(load_board(board), root, out, verify=False)
    data = json.loads((out / "board.json").read_text())
    rows = []
    for row in data["rows"]:
        rows.append({key: value for key, value in row.items() if key != "viewer"})
        if row["critic"] != "none":
            rows[-1].update(LONG_IDS)
        elif row["name"] == "noisy b":
            rows[-1]["policy"] = LONG_IDS["policy"].replace("CancelBot", "CancelBotV2")
    long_ids = out / "long-ids.html"
    page = board_html(Board.model_validate({**data, "rows": rows}), (out / "curve.svg").read_text())
    long_ids.write_text(page)
    return BuiltBoard(out=out, long_ids=long_ids, data=data)


def _row(data: dict, name: str) -> dict:
    return next(row for row in data["rows"] if row["name"] == name)


def test_strict_and_critic_figures_in_every_form(built: BuiltBoard) -> None:
    critic = _row(built.data, "noisy + rules")
    plain = _row(built.data, "noisy a")
    assert set(plain["strict"]) == {"pass^1", "pass^2"}
    assert plain["strict"]["pass^1"]["value"] <= plain["metrics"]["pass^1"]["value"]
    assert plain["critic_figures"] is None
    figures = critic["critic_figures"]
    assert figures["false_flag_rate"] == critic["false_flag_rate"]
    assert figures["detection_rate"] == critic["detection_rate"]
    assert figures["flag_rate"] is not None and figures["correction_rate"] is not None
    low, high = figures["detection_rate_ci"]
    assert low <= figures["detection_rate"] <= high
    table = {row["name"]: row for row in csv.DictReader(io.StringIO((built.out / "board.csv").read_text()))}
    assert float(table["noisy a"]["strict pass^2"]) == pytest.approx(
        plain["strict"]["pass^2"]["value"], abs=1e-4
    )
    assert float(table["noisy + rules"]["flag_rate"]) == pytest.approx(figures["flag_rate"], abs=1e-4)
    assert table["noisy a"]["flag_rate"] == ""
    markdown = (built.out / "board.md").read_text()
    header = next(line for line in markdown.splitlines() if line.startswith("| # |"))
    assert "| strict pass^1 | strict pass^2 |" in header and "| flag rate | false-flag rate |" in header
    assert f"{figures['false_flag_rate']:.3f} (" in markdown


def test_equal_figures_share_a_rank_and_say_they_tie(built: BuiltBoard) -> None:
    a, b = _row(built.data, "noisy a"), _row(built.data, "noisy b")
    assert a["rank"] == b["rank"]
    assert a["rank_note"].startswith("ties with noisy b") and b["rank_note"].startswith("ties with noisy a")
    assert "ties with noisy a" in (built.out / "board.md").read_text()


def _row_of(name: str, value: float, low: float, high: float) -> BoardRow:
    cell = Cell(value=value, low=low, high=high)
    return BoardRow(
        name=name, slug=name, note="", run_id=name, policy="p", critic="none", user="scripted", traits=None,
        privileged=[], tasks=10, trials=2, metrics={"pass^1": cell}, curve=[value], false_flag_rate=None,
        detection_rate=None, cost_per_trial=None,
    )  # fmt: skip


def test_neighbours_whose_intervals_overlap_are_noted(built: BuiltBoard) -> None:
    spec = load_board(built.out.parent / "leaderboards" / "layout.toml").model_copy(
        update={"rank_by": "pass^1"}
    )
    rows = rank_rows(
        spec,
        [_row_of("a", 0.9, 0.85, 0.95), _row_of("b", 0.8, 0.7, 0.88), _row_of("c", 0.3, 0.2, 0.4)],
    )
    assert [row.rank for row in rows] == [1, 2, 3]
    assert rows[0].rank_note == ""
    assert rows[1].rank_note == "not credibly below #1 a: their 95% intervals of pass^1 overlap"
    assert rows[2].rank_note == ""  # 0.4 < 0.7: credibly below


def _paired_row(name: str, successes: list[int], seed: int) -> BoardRow:
    """A row over 20 tasks of 2 trials each, with the per-task figures the paired test reads."""
    figures = summarize_counts(
        {f"retail/t{i}": TaskOutcome(n=2, successes=count) for i, count in enumerate(successes)}, seed=0
    )
    low, high = figures.ci95[1]
    row = _row_of(name, round(figures.pass_hat[1], 4), round(low, 4), round(high, 4))
    row._figures = figures
    row._seed = seed
    return row


def test_neighbours_that_share_tasks_and_seeds_get_the_paired_test(built: BuiltBoard) -> None:
    spec = load_board(built.out.parent / "leaderboards" / "layout.toml").model_copy(
        update={"rank_by": "pass^1"}
    )
    upper = [2] * 10 + [1] * 10
    close = [2] * 9 + [1] * 11  # one task worse: not credibly different
    far = [0] * 20
    rows = rank_rows(spec, [_paired_row("a", upper, 0), _paired_row("b", close, 0), _paired_row("c", far, 0)])
    assert rows[1].rank_note.startswith("not credibly below #1 a: paired pass^1 difference +0.025 (95% CI")
    assert rows[1].rank_note.endswith(", 20 shared tasks)")
    assert rows[2].rank_note == ""
    other_seed = rank_rows(spec, [_paired_row("a", upper, 0), _paired_row("b", close, 1)])
    assert other_seed[1].rank_note == "not credibly below #1 a: their 95% intervals of pass^1 overlap"


def test_every_entry_draws_its_own_curve_and_band() -> None:
    svg = curve_svg(
        "t", [("a", [0.5, 0.25]), ("b", [0.5, 0.25]), ("c", [1.0, 1.0])], [([0.4, 0.2], [0.6, 0.3])] * 3
    )
    curves = [line for line in svg.splitlines() if line.startswith('<polyline class="curve"')]
    assert len(curves) == 3 and svg.count('<polygon class="band"') == 3
    points = [line.split('points="')[1].split('"')[0] for line in curves]
    assert len(set(points)) == 3, "identical figures still draw two visible lines"
    assert "stroke-dasharray" in curves[1] and "b (= a)" in svg
    top = float(points[2].split()[0].split(",")[1])
    assert top > 36, "a curve at pass^k = 1 lies inside the frame, not on it"


def test_short_ids_tell_two_builds_apart() -> None:
    assert short_id("scripted:noisy") == "scripted:noisy"
    shown = short_id(LONG_IDS["policy"])
    assert (
        len(shown) == 64
        and shown.startswith("team.agents.cancellation_bot:CancelBot?model=")
        and shown[-1] == "…"
    )
    assert short_id(LONG_IDS["policy"]) != short_id(LONG_IDS["policy"].replace("CancelBot", "CancelBotV2"))
    deep = "a" * 80 + ".bots:CancelBotV2"
    assert short_id(deep).endswith("…:CancelBotV2") and len(short_id(deep)) == 64
    assert "".join(id_parts(LONG_IDS["policy"])) == shown
    assert id_parts("team.bot:CancelBot") == ["team.", "bot:", "CancelBot"]


LAYOUT_CHECKS = """() => {
  const fits = [...document.querySelectorAll('.fits')].map(e => [e.scrollWidth, e.clientWidth]);
  const ids = [...document.querySelectorAll('#board code.id')].map(e => ({
    text: e.textContent, id: e.dataset.id, title: e.title,
    parts: [...e.querySelectorAll('span')].map(s => [s.textContent, s.getClientRects().length]),
  }));
  const names = [...document.querySelectorAll('#board td.entry b')].map(e => e.textContent);
  return {scroll: document.documentElement.scrollWidth, width: window.innerWidth, fits, ids, names};
}"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page_name", ["index.html", "long-ids.html"])
def test_board_reads_at_a_glance(
    built: BuiltBoard, browser_page: BrowserPage, width: int, page_name: str
) -> None:
    page = browser_page.page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto((built.out / page_name).as_uri())
    found = page.evaluate(LAYOUT_CHECKS)
    if folder := os.environ.get("CASTBENCH_BOARD_SCREENS"):  # to look at the page yourself
        page.screenshot(path=str(Path(folder) / f"{Path(page_name).stem}-{width}.png"), full_page=True)
    assert found["scroll"] <= found["width"], f"the page scrolls sideways at {width} px"
    for scroll, client in found["fits"]:
        assert scroll <= client, f"a table scrolls sideways at {width} px"
    assert found["ids"], "ids are shown"
    for shown in found["ids"]:
        # the id wraps, if at all, only between pieces that end at : . / ? & =, never in a word
        assert [text for text, _ in shown["parts"]] == id_parts(shown["id"])
        assert all(lines == 1 for _, lines in shown["parts"]), f"{shown['id']} broke mid-word at {width} px"
        assert shown["title"] == shown["id"] and shown["text"] == short_id(shown["id"])
    rows = len(built.data["rows"])
    assert page.locator("figure svg polyline.curve").count() == rows
    assert page.locator("figure svg polygon.band").count() == rows
    drawn = page.locator("figure svg polyline.curve").evaluate_all(
        "ls => ls.map(l => l.getAttribute('points'))"
    )
    assert len(set(drawn)) == rows
    headers = page.locator("#board thead th").all_text_contents()
    assert {"strictpass^1", "strictpass^2"} <= set(headers)
    tie = page.locator("#board .rank-note", has_text="ties with")
    assert tie.count() == 2
    badge = page.locator("#board details.provenance summary").first
    assert badge.inner_text() in {"submitted", "re-run"}
    details = page.locator("#board details.provenance p").first
    assert not details.is_visible()
    badge.click()
    assert details.is_visible() and "trials:" in details.inner_text()
    critic = page.locator("#board td.critic").all_inner_texts()
    assert any("false flags" in text and "detection" in text for text in critic)
    assert browser_page.errors == [] and browser_page.external == []
