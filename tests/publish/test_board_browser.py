"""The committed leaderboard page in headless Chromium: it loads with no outside resources,
sorts by a clicked column, draws the curve, and links to each entry's trajectories."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._results.publish.board import load_board
from tests.viewer.browser import BrowserPage

BOARD = Path(__file__).resolve().parents[2] / "leaderboards" / "scripted-baselines"


def _column(page: object, index: int) -> list[str]:
    return page.locator(f"#board tbody tr td:nth-child({index})").all_inner_texts()  # type: ignore[attr-defined]


def test_board_page_sorts_and_links(browser_page: BrowserPage) -> None:
    spec = load_board(BOARD.parent / "scripted-baselines.toml")
    page = browser_page.page
    page.goto((BOARD / "index.html").as_uri())
    rows = page.locator("#board tbody tr")
    assert rows.count() == len(spec.entries or [])
    assert _column(page, 1) == [str(rank) for rank in sorted(int(r) for r in _column(page, 1))]
    headers = page.locator("#board thead th").all_inner_texts()
    pass_1 = headers.index("pass^1") + 1

    def values() -> list[float]:
        return [float(text.split()[0]) for text in _column(page, pass_1)]

    page.locator("#board thead th").nth(pass_1 - 1).click()
    assert values() == sorted(values())
    page.locator("#board thead th").nth(pass_1 - 1).click()
    assert values() == sorted(values(), reverse=True)
    entry = headers.index("entry") + 1
    page.locator("#board thead th").nth(entry - 1).click()
    names = [text.splitlines()[0].lower() for text in _column(page, entry)]
    assert names == sorted(names)
    assert page.locator("figure svg polyline").count() == rows.count()
    for href in page.locator("#board a").evaluate_all("links => links.map(a => a.getAttribute('href'))"):
        assert (BOARD / href).is_file()
    assert browser_page.errors == [] and browser_page.external == []


def test_board_links_open_a_working_viewer(browser_page: BrowserPage) -> None:
    page = browser_page.page
    page.goto((BOARD / "index.html").as_uri())
    page.locator("#board a").first.click()
    page.wait_for_url("**/runs/*.html")
    page.locator(".mark").first.click()
    page.locator("#trial h2").wait_for()
    assert browser_page.errors == [] and browser_page.external == []


@pytest.mark.parametrize("width", [1280, 390])
def test_committed_board_fits_the_screen(browser_page: BrowserPage, width: int) -> None:
    """The committed board (several domains, critic rows, a reliability profile) reads at 1280 px
    and on a phone: no sideways scroll of the page or of any of its tables, the strict figures
    beside pass^k, one curve and band per entry."""
    spec = load_board(BOARD.parent / "scripted-baselines.toml")
    page = browser_page.page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto((BOARD / "index.html").as_uri())
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    tables = page.evaluate("[...document.querySelectorAll('.fits')].map(e => e.scrollWidth - e.clientWidth)")
    assert len(tables) == 3 and max(tables) <= 0, tables
    rows = len(spec.entries or [])
    assert page.locator("figure svg polyline.curve").count() == rows
    assert page.locator("figure svg polygon.band").count() == rows
    assert page.locator("#board thead th.strict").count() == 2
    assert page.locator("#board td.critic", has_text="false flags").count() == 2
