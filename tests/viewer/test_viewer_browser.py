"""The run page in headless Chromium: it loads, a trial opens step by step, the diff shows,
and markup written by agents stays text."""

from __future__ import annotations

import threading
from pathlib import Path

from castbench_boards.viewer import page_server, render_run_page
from tests.viewer.browser import BrowserPage
from tests.viewer.hostile import SCRIPT, HostileRun


def _page(hostile_run: HostileRun, tmp_path: Path) -> Path:
    path = tmp_path / "run.html"
    path.write_text(render_run_page(hostile_run.run_id, hostile_run.config, hostile_run.records))
    return path


def test_a_failed_trial_opens_with_its_steps_and_diff(
    hostile_run: HostileRun, tmp_path: Path, browser_page: BrowserPage
) -> None:
    page = browser_page.page
    page.goto(_page(hostile_run, tmp_path).as_uri())
    assert page.locator(".mark").count() == len(hostile_run.records)
    page.locator(".mark.fail").first.click()
    pane = page.locator("#trial")
    pane.locator("text=FAIL").first.wait_for()
    assert pane.locator(".step").count() > 1
    assert pane.locator(".proposal").count() > 0 and "critique:" in pane.inner_text()
    assert pane.locator("table.diff tr").count() >= 2  # a header and at least one differing field
    assert SCRIPT in pane.inner_text()  # shown literally, as text
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#trial script, #trial img").count() == 0
    assert browser_page.errors == [] and browser_page.external == []


def test_a_passed_trial_shows_the_state_matches(
    hostile_run: HostileRun, tmp_path: Path, browser_page: BrowserPage
) -> None:
    page = browser_page.page
    page.goto(_page(hostile_run, tmp_path).as_uri())
    mark = page.locator(".mark.pass").first
    key = mark.get_attribute("data-key")
    mark.click()
    page.locator("#trial .diff-ok").wait_for()
    assert page.locator("#trial").inner_text().count("PASS") >= 1
    assert page.evaluate("location.hash") == f"#{key}"
    assert page.evaluate("window.__pwned") is None and browser_page.errors == []


def test_served_page_and_deep_link(hostile_run: HostileRun, browser_page: BrowserPage) -> None:
    html = render_run_page(hostile_run.run_id, hostile_run.config, hostile_run.records)
    server = page_server(html, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        record = next(r for r in hostile_run.records if not r.passed)
        key = f"{record.domain}/{record.task_id}/{record.trial_index}"
        page = browser_page.page
        page.goto(f"http://127.0.0.1:{port}/#{key}")
        page.locator("#trial h2").wait_for()
        assert f"{record.task_id} · trial {record.trial_index}" in page.locator("#trial h2").inner_text()
        assert page.locator(".mark.open").get_attribute("data-key") == key
        assert browser_page.errors == [] and browser_page.external == []
    finally:
        server.shutdown()
        server.server_close()
