"""A published run page (a board's `runs/NAME.html`) holds its task table; the trajectories are in
chunk files beside it, loaded when one of their trials is opened, from disk (file://, where
browsers refuse fetch()) and from a static web server. Trials that played the same conversation
are carried once."""

from __future__ import annotations

import functools
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from castbench._records.trial import TrialRecord
from castbench_boards.viewer import render_run_files
from castbench_boards.viewer.payload import decode_trials, trial_chunks, trial_payload
from tests.viewer.browser import BrowserPage
from tests.viewer.hostile import SCRIPT, HostileRun


class _Quiet(SimpleHTTPRequestHandler):
    """A static file server, as a page would be published on one, that logs nothing."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the http.server API)
        return


def _ordered(records: list[TrialRecord]) -> list[TrialRecord]:
    return sorted(records, key=lambda r: (r.domain, r.task_id, r.trial_index))


def _write(hostile_run: HostileRun, folder: Path, budget: int = 1) -> Path:
    """The run's page and chunk files in `folder`; budget 1: a chunk per trial."""
    files = render_run_files(
        hostile_run.run_id, hostile_run.config, hostile_run.records, "run", chunk_budget=budget
    )
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder / "run.html"


def test_identical_trials_are_carried_once_each_with_its_own_index_and_seed(hostile_run: HostileRun) -> None:
    record = hostile_run.records[0]
    repeats = [record.model_copy(update={"trial_index": index, "seed": 1000 + index}) for index in range(8)]
    (chunk,) = trial_chunks(repeats)
    payloads = decode_trials(chunk.data)
    assert [(p["trial_index"], p["seed"]) for p in payloads] == [(i, str(1000 + i)) for i in range(8)]
    assert all(p == trial_payload(r) for p, r in zip(payloads, repeats, strict=True))
    alone = trial_chunks(repeats[:1])[0].data
    assert len(chunk.data) < 1.2 * len(alone)  # seven more trials cost a few bytes each, not a body each


def test_chunks_keep_to_their_budget_and_cover_the_run_in_page_order(hostile_run: HostileRun) -> None:
    ordered = _ordered(hostile_run.records)
    payloads = [trial_payload(r) for r in ordered]
    sizes = [len(json.dumps(p, separators=(",", ":"))) for p in payloads]
    budget = 2 * max(sizes)
    chunks = trial_chunks(ordered, budget=budget)
    assert 1 < len(chunks) < len(ordered)
    assert [c.start for c in chunks] == [sum(c.count for c in chunks[:i]) for i in range(len(chunks))]
    assert [p for c in chunks for p in decode_trials(c.data)] == payloads
    for c in chunks:
        assert sum(sizes[c.start : c.start + c.count]) <= budget or c.count == 1
    files = render_run_files(hostile_run.run_id, hostile_run.config, ordered, "noisy", chunk_budget=budget)
    assert sorted(files) == ["noisy.html", *(f"noisy/trials-{n:03d}.js" for n in range(1, len(chunks) + 1))]
    assert 'id="trials-data"' not in files["noisy.html"]  # the page carries no trajectory itself
    assert SCRIPT not in "".join(files.values())


def test_a_trial_loads_on_demand_from_disk(
    hostile_run: HostileRun, tmp_path: Path, browser_page: BrowserPage
) -> None:
    page = browser_page.page
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(_write(hostile_run, tmp_path).as_uri())
    marks = page.locator(".mark")
    assert marks.count() == len(hostile_run.records)
    assert not [url for url in requested if url.endswith(".js")]  # nothing loaded before a click
    last = _ordered(hostile_run.records)[-1]
    marks.last.click()
    page.locator("#trial h2").wait_for()
    assert f"{last.task_id} · trial {last.trial_index}" in page.locator("#trial h2").inner_text()
    assert [url.rsplit("/", 2)[-2:] for url in requested if url.endswith(".js")] == [
        ["run", f"trials-{len(hostile_run.records):03d}.js"]
    ]
    failed = page.locator(".mark.fail").first
    failed.click()
    page.locator("#trial", has_text="FAIL").wait_for()
    assert SCRIPT in page.locator("#trial").inner_text()  # shown literally, as text
    assert page.evaluate("window.__pwned") is None and page.locator("#trial script, #trial img").count() == 0
    marks.last.click()  # a chunk loaded once is not asked for again
    page.locator("#trial h2", has_text=f"trial {last.trial_index}").wait_for()
    assert len([url for url in requested if url.endswith(".js")]) == 2
    assert browser_page.errors == [] and browser_page.external == []


def test_a_deep_link_loads_its_trial_from_a_static_server(
    hostile_run: HostileRun, tmp_path: Path, browser_page: BrowserPage
) -> None:
    _write(hostile_run, tmp_path, budget=10**6)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        record = next(r for r in hostile_run.records if not r.passed)
        key = f"{record.domain}/{record.task_id}/{record.trial_index}"
        page = browser_page.page
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/run.html#{key}")
        page.locator("#trial h2").wait_for()
        assert f"{record.task_id} · trial {record.trial_index}" in page.locator("#trial h2").inner_text()
        assert page.locator(".mark.open").get_attribute("data-key") == key
        assert browser_page.errors == [] and browser_page.external == []
    finally:
        server.shutdown()
        server.server_close()


def test_a_missing_chunk_file_is_said_in_the_pane(
    hostile_run: HostileRun, tmp_path: Path, browser_page: BrowserPage
) -> None:
    path = _write(hostile_run, tmp_path)
    (tmp_path / "run" / "trials-001.js").unlink()
    page = browser_page.page
    page.goto(path.as_uri())
    page.locator(".mark").first.click()
    page.locator("#trial .load-error").wait_for()
    assert page.locator("#trial .load-error").inner_text() == "cannot load the trials file run/trials-001.js"
    page.locator(".mark").nth(1).click()  # the other chunks still open
    page.locator("#trial h2").wait_for()
    assert [error for error in browser_page.errors if not error.startswith("Failed to load resource")] == []
