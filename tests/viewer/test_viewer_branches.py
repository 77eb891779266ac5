"""Counterfactual branches beside the trial in the viewer: at each verdict, what the other verdict
played to, and what the verdict did; a page without branches is the page it always was."""

from __future__ import annotations

from pathlib import Path

from castbench._records.config import RunConfig
from castbench._records.trial import TrialRecord
from castbench._run.api import build_config
from castbench._run.plan import plan_trials
from castbench._run.work import ExpectedStates, run_job
from castbench_analyses.branches import TrialBranches
from castbench_analyses.counterfactual import branch_trial
from castbench_boards.viewer import render_run_page
from tests.viewer.browser import BrowserPage


def _branched_run() -> tuple[RunConfig, list[TrialRecord], list[TrialBranches]]:
    config, agents = build_config(
        policy="scripted:noisy?draws=keyed",
        critic="oracle",
        domains="retail",
        trials=1,
        tasks="retail-test-0003",
    )
    expected = ExpectedStates()
    jobs = list(plan_trials(config))
    records = [run_job(job, config, agents, expected) for job in jobs]
    branches = [branch_trial(r, config, agents, j, expected) for r, j in zip(records, jobs, strict=True)]
    return config, records, branches


def test_a_trial_shows_its_branches_at_their_verdicts(tmp_path: Path, browser_page: BrowserPage) -> None:
    config, records, branches = _branched_run()
    played = [b for b in branches[0].branches if b.played]
    assert played
    path = tmp_path / "run.html"
    path.write_text(render_run_page("r-1", config, records, branches=branches))
    page = browser_page.page
    page.goto(path.as_uri())
    page.locator(".mark").first.click()
    pane = page.locator("#trial")
    pane.locator("details.branch").first.wait_for()
    assert pane.locator("details.branch").count() == len(branches[0].branches)
    text = pane.inner_text()
    assert "counterfactual at round" in text and "this verdict" in text
    effects = {b.effect for b in played}
    for effect in effects & {"saved", "cost"}:
        assert pane.locator(f"details.branch-{effect}").count() >= 1
    pane.locator("details.branch").first.click()  # opens the branch's own steps
    assert pane.locator("details.branch[open] .step").count() >= 1
    assert browser_page.errors == [] and browser_page.external == []


def test_a_page_without_branches_is_unchanged() -> None:
    config, records, _ = _branched_run()
    page = render_run_page("r-1", config, records)
    assert "showBranch" not in page and ".branch" not in page
    assert render_run_page("r-1", config, records, branches=[]) == page
