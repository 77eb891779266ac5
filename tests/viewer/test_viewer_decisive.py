"""The viewer marks the decisive step `castbench runs why` names (castbench._results.attribution), not the
last reply: for a failed trial whose decisive step is a tool call, the page's data and the page
itself mark that call, with the reason line `runs show` prints."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from castbench import evaluate
from castbench._records.store import ResultsStore
from castbench_boards.viewer.payload import decode_trials
from tests.support import invoke, sqlite_url
from tests.viewer.browser import BrowserPage

TASKS = ["retail-test-0001", "retail-test-0002", "retail-test-0003"]
"""Failed by the noisy agent at a tool call well before its last reply (a wrong tool, a value
nothing revealed)."""


def _embedded(html: str) -> list[dict[str, Any]]:
    match = re.search(
        r'<script type="application/octet-stream" id="trials-data">([A-Za-z0-9+/=]+)</script>', html
    )
    assert match
    trials: list[dict[str, Any]] = decode_trials(match.group(1))
    return trials


@pytest.fixture(scope="module")
def noisy_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """`runs why --json` rows of a noisy run, each with its trial's data on the page `castbench
    view` wrote (both over the CLI, from the store): the page, and the rows with `payload`."""
    folder = tmp_path_factory.mktemp("decisive")
    db = sqlite_url(folder / "runs.db")
    noisy = "scripted:noisy?p=0.6&recover=0"
    result = evaluate(db=db, domains="retail", policy=noisy, trials=1, tasks=TASKS, in_process=True)
    assert ResultsStore(db).trials(result.outcome.run_id)
    why = invoke("runs", "why", "latest", "--json", "--db", db)
    assert why.exit_code == 0, why.output
    rows: list[dict[str, Any]] = json.loads(why.output)
    page = folder / "run.html"
    viewed = invoke("view", "latest", "--out", str(page), "--db", db)
    assert viewed.exit_code == 0, viewed.output
    trials = {(t["domain"], t["task_id"], t["trial_index"]): t for t in _embedded(page.read_text())}
    for row in rows:
        row["payload"] = trials[row["domain"], row["task"], row["trial"]]
    return page, rows


def _last_reply(payload: dict[str, Any]) -> int:
    return max(s["index"] for s in payload["steps"] if (s.get("action") or {}).get("kind") == "reply")


def _at_a_call(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose decisive step is an executed tool call before the trial's last reply."""
    found = []
    for row in rows:
        steps = {s["index"]: s for s in row["payload"]["steps"]}
        step = steps.get(row["step"])
        called = step is not None and (step.get("action") or {}).get("kind") == "tool_call"
        if called and row["step"] < _last_reply(row["payload"]):
            found.append(row)
    return found


def test_the_page_data_marks_the_step_runs_why_names(noisy_page: tuple[Path, list[dict[str, Any]]]) -> None:
    _, rows = noisy_page
    assert len(rows) == len(TASKS)  # every trial failed: each has its row and its mark
    for row in rows:
        blame = row["payload"]["attribution"]
        assert (blame["step"], blame["party"], blame["cause"]) == (row["step"], row["party"], row["cause"])
        assert blame["evidence"]["rule"] == row["rule"] and blame["evidence"]["detail"] == row["detail"]
        blamed = [line for line in row["payload"]["reasons"] if line.startswith("blamed:")]
        assert blamed == [
            f"blamed: {row['party']} · {row['cause']} at step {row['step']} ({row['rule']}: {row['detail']})"
        ]
    assert _at_a_call(rows), "the run has a trial decided at a tool call, not at the last reply"


def test_the_page_marks_that_tool_call_as_decisive(
    noisy_page: tuple[Path, list[dict[str, Any]]], browser_page: BrowserPage
) -> None:
    page_path, rows = noisy_page
    row = _at_a_call(rows)[0]
    call = next(s for s in row["payload"]["steps"] if s["index"] == row["step"])["action"]
    page = browser_page.page
    page.goto(f"{page_path.as_uri()}#retail/{row['task']}/{row['trial']}")
    pane = page.locator("#trial")
    pane.locator("text=FAIL").first.wait_for()
    marked = pane.locator(".step.decisive")
    assert marked.count() == 1  # one decisive step, and not the last reply
    text = marked.inner_text()
    assert text.startswith(f"step {row['step']} · decisive: {row['party']} {row['cause']}")
    assert f"{call['name']}(" in text
    assert (
        pane.locator(".decisive-note", has_text="blamed:")
        .inner_text()
        .startswith(f"blamed: {row['party']} · {row['cause']} at step {row['step']}")
    )
    assert browser_page.errors == [] and browser_page.external == []
