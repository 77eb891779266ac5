"""The viewer's summary shows what the headline shows: strict pass^k beside plain pass^k, and
the critic's figures with their intervals when a critic ran (issue 60)."""

from __future__ import annotations

import re

from castbench._results.report.summary import summarize_run
from castbench_boards.viewer.page import render_run_page
from tests.viewer.hostile import HostileRun


def _rows(html: str, table: str) -> dict[str, str]:
    """Row name -> the first cell's text of the summary table whose class is `table`."""
    start = html.index(f'<table class="{table}">')
    body = html[start : html.index("</table>", start)]
    return dict(re.findall(r"<tr[^>]*><th>([^<]+)</th><td>([^<]*)</td>", body))


def test_viewer_shows_strict_and_critic_figures(hostile_run: HostileRun) -> None:
    run = hostile_run
    html = render_run_page(run.run_id, run.config, run.records)
    report = summarize_run(run.run_id, run.config, run.records).domains["retail"]
    assert report.strict is not None and report.critic is not None
    rows = _rows(html, "summary")
    for k in (1, 2, 3):
        low, high = report.ci95[k]
        assert rows[f"pass^{k}"] == f"{report.pass_hat[k]:.3f} ({low:.2f}–{high:.2f})"
        low, high = report.strict.ci95[k]
        assert rows[f"strict pass^{k}"] == f"{report.strict.pass_hat[k]:.3f} ({low:.2f}–{high:.2f})"
    critic = _rows(html, "summary critic")
    assert set(critic) == {"flag rate", "false-flag rate", "detection", "correction", "MCC"}
    assert critic["flag rate"] == f"{report.critic.flag_rate:.3f}"
    if report.critic.false_flag_rate_ci is not None:
        low, high = report.critic.false_flag_rate_ci
        assert critic["false-flag rate"] == f"{report.critic.false_flag_rate:.3f} ({low:.2f}–{high:.2f})"
    else:
        assert critic["false-flag rate"].startswith(
            "–" if report.critic.false_flag_rate is None else f"{report.critic.false_flag_rate:.3f}"
        )


def test_viewer_without_a_critic_shows_no_critic_table(hostile_run: HostileRun) -> None:
    run = hostile_run
    records = [
        r.model_copy(
            update={
                "steps": [
                    s.model_copy(
                        update={"proposals": [p.model_copy(update={"verdict": None}) for p in s.proposals]}
                    )
                    for s in r.steps
                ]
            }
        )
        for r in run.records
    ]
    html = render_run_page(run.run_id, run.config.model_copy(update={"critic": "none"}), records)
    assert 'class="summary critic"' not in html
    assert "strict pass^1" in html
