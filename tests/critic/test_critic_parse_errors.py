"""Unreadable critic verdicts are counted and shown, and the critic report carries bootstrap
intervals of MCC and the false-flag rate over tasks (issue #25: a served critic whose every
answer was unreadable looked like a lenient one, in no report)."""

from __future__ import annotations

import json

from castbench._agents.models.parse import verdict_from_text
from castbench._base.conversation import ToolCallAction, Verdict
from castbench._records.metrics.critic import CriticRecord, critic_intervals
from castbench._records.trial import ActionLabel, Proposal, StepRecord, TrialRecord
from castbench._results.report.critic_report import critic_report


def _trial(task: str, verdicts: list[tuple[Verdict, str]]) -> TrialRecord:
    steps = [
        StepRecord(
            index=i,
            proposals=[
                Proposal(
                    round=0,
                    action=ToolCallAction(name="get_order_details", arguments={"order_id": f"#W{i}"}),
                    verdict=verdict,
                    label=ActionLabel(
                        label=label, failure_type="hallucination" if label == "invalid" else "none"
                    ),  # type: ignore[arg-type]
                )
            ],
            action=ToolCallAction(name="get_order_details", arguments={"order_id": f"#W{i}"}),
        )
        for i, (verdict, label) in enumerate(verdicts)
    ]
    return TrialRecord(
        domain="retail",
        domain_version="1-0",
        task_id=task,
        trial_index=0,
        seed=0,
        status="scored",
        reward=1.0,
        end_reason="user_stop",
        opening="hi",
        steps=steps,
    )


def test_unreadable_verdicts_are_counted_and_recorded_as_passes() -> None:
    garbage = verdict_from_text("the the the")
    flag = verdict_from_text(json.dumps({"verdict": "invalid", "failure_type": "hallucination"}))
    report = critic_report([_trial("t1", [(garbage, "invalid"), (garbage, "valid"), (flag, "invalid")])])
    assert report is not None
    assert report.parse_errors == 2
    assert report.unparseable_verdict == "pass"
    assert report.counts.pass_invalid == 1 and report.counts.pass_valid == 1
    dumped = json.loads(report.model_dump_json())  # what `--output` writes
    assert dumped["parse_errors"] == 2 and dumped["unparseable_verdict"] == "pass"


def test_critic_table_shows_unreadable_verdicts() -> None:
    from rich.console import Console

    from castbench._records.config import RunConfig
    from castbench._results.report.summary import summarize_run
    from castbench._results.report.tables import critic_table

    garbage = verdict_from_text("the the the")
    config = RunConfig(domains={"retail": "1-0"}, policy="p", critic="c", trials=1)
    summary = summarize_run("r", config, [_trial("t1", [(garbage, "invalid"), (garbage, "valid")])])
    table = critic_table(summary)
    assert table is not None
    console = Console(width=200, record=True)
    console.print(table)
    rows = [line for line in console.export_text().splitlines() if "unreadable verdicts" in line]
    assert rows and rows[0].strip("│ ").split()[-1] == "2"


def test_mcc_interval_resamples_tasks() -> None:
    good = [CriticRecord("flag", "invalid"), CriticRecord("pass", "valid")]
    groups = [good] * 10
    intervals = critic_intervals(groups, resamples=200, seed=1)
    assert intervals.mcc == (1.0, 1.0) and intervals.false_flag_rate == (0.0, 0.0)
    mixed = [*groups, [CriticRecord("flag", "valid"), CriticRecord("pass", "invalid")]] * 2
    wide = critic_intervals(mixed, resamples=500, seed=1)
    assert wide.mcc is not None and wide.mcc[0] < 1.0 and wide.mcc[1] <= 1.0
    assert critic_intervals([[CriticRecord("pass", "valid")]], resamples=50).mcc is None  # no flag: undefined


def test_report_carries_intervals() -> None:
    flag = Verdict(verdict="invalid", failure_type="hallucination")
    ok = Verdict(verdict="valid")
    trials = [_trial(f"t{i}", [(flag, "invalid"), (ok, "valid")]) for i in range(4)]
    trials.append(_trial("t9", [(ok, "invalid"), (flag, "valid")]))
    report = critic_report(trials)
    assert report is not None and report.parse_errors == 0
    assert report.mcc_ci is not None and report.mcc_ci[0] <= report.mcc <= report.mcc_ci[1]  # type: ignore[operator]
    assert report.false_flag_rate_ci is not None


def test_boards_show_unreadable_verdicts() -> None:
    from castbench._results.publish.board import BoardMetric
    from castbench_boards.render import Board, board_markdown
    from castbench_boards.rows import BoardRow, Cell

    row = BoardRow(
        rank=1, name="x", slug="x", note="", run_id="r-1", policy="p", critic="c", user="scripted",
        traits=None, privileged=[], tasks=10, trials=2,
        metrics={"pass^1": Cell(value=0.5, low=0.4, high=0.6)}, curve=[0.5, 0.25],
        false_flag_rate=0.1, detection_rate=0.5, critic_parse_errors=7, cost_per_trial=None,
    )  # fmt: skip
    board = Board(
        name="b", title="b", description="", domains={"retail": 1}, split="test", trials=2,
        metrics=[BoardMetric(metric="pass^1")], rank_by="pass^1", allow_privileged=False, rows=[row],
    )  # fmt: skip
    lines = board_markdown(board).splitlines()
    header = [cell.strip() for cell in next(line for line in lines if line.startswith("| # |")).split("|")]
    cells = [cell.strip() for cell in next(line for line in lines if line.startswith("| 1 |")).split("|")]
    assert cells[header.index("unreadable verdicts")] == "7"
    assert json.loads(board.model_dump_json())["rows"][0]["critic_parse_errors"] == 7
