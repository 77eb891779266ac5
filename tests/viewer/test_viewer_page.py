"""The run page as HTML: escaping, the embedded trials, the server, the command."""

from __future__ import annotations

import re
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._records.store.export import export_run, write_export
from castbench_boards.viewer import page_server, render_run_page
from castbench_boards.viewer.payload import decode_trials
from tests.viewer.hostile import EVIL, IMAGE, SCRIPT, HostileRun

cli = CliRunner()


def _embedded(html: str) -> list[dict]:
    match = re.search(
        r'<script type="application/octet-stream" id="trials-data">([A-Za-z0-9+/=]+)</script>', html
    )
    assert match
    return decode_trials(match.group(1))


def test_markup_from_trajectories_never_reaches_the_html(hostile_run: HostileRun) -> None:
    html = render_run_page(hostile_run.run_id, hostile_run.config, hostile_run.records)
    assert SCRIPT not in html and IMAGE not in html and "onerror=" not in html
    assert "team.agent:Policy?note=&lt;script&gt;" in html  # run-level text is escaped, not dropped
    trials = _embedded(html)
    assert len(trials) == len(hostile_run.records) == html.count('class="mark ')
    assert trials[0]["opening"].startswith(EVIL)  # the page gets the text as it was, to show as text


def test_embedded_trials_are_the_stored_records_without_timings(hostile_run: HostileRun) -> None:
    trials = _embedded(render_run_page(hostile_run.run_id, hostile_run.config, hostile_run.records))
    ordered = sorted(hostile_run.records, key=lambda r: (r.domain, r.task_id, r.trial_index))
    for payload, record in zip(trials, ordered, strict=True):
        assert (payload["task_id"], payload["trial_index"]) == (record.task_id, record.trial_index)
        assert payload["seed"] == str(record.seed)  # exact, unlike a JavaScript number
        assert "duration_s" not in payload and all("timing" not in step for step in payload["steps"])
        assert len(payload["steps"]) == len(record.steps)
    verdicts = [p["verdict"] for t in trials for s in t["steps"] for p in s["proposals"] if "verdict" in p]
    assert verdicts, "the critic's verdicts travel with the page"


def test_same_records_same_page(hostile_run: HostileRun) -> None:
    first = render_run_page(hostile_run.run_id, hostile_run.config, hostile_run.records)
    again = render_run_page(hostile_run.run_id, hostile_run.config, list(reversed(hostile_run.records)))
    assert first == again


def test_page_server_answers_on_loopback_only_the_page() -> None:
    server = page_server("<!DOCTYPE html><title>t</title>", port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            assert response.status == 200 and b"<title>t</title>" in response.read()
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=5)
    finally:
        server.shutdown()
        server.server_close()


def test_view_command_from_store_and_from_export(hostile_run: HostileRun, tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    result = cli.invoke(app, ["view", hostile_run.run_id[:8], "--db", hostile_run.db, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    exported = tmp_path / "run.castbench.json.gz"
    write_export(export_run(ResultsStore(hostile_run.db), hostile_run.run_id), exported)
    from_file = tmp_path / "from-file.html"
    result = cli.invoke(app, ["view", str(exported), "--out", str(from_file)])
    assert result.exit_code == 0, result.output
    assert from_file.read_text() == out.read_text()
    missing = cli.invoke(app, ["view", "r-none", "--db", hostile_run.db, "--out", str(tmp_path / "x.html")])
    assert missing.exit_code == 2 and "no run 'r-none'" in missing.output
