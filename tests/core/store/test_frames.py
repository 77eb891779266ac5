"""`castbench_analyses.frames`: a stored run as DataFrames, one row per trial, step and critic verdict, each
value the stored record's own (checked here against `ResultsStore.trials`), and pandas imported only
when a frame is built."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from castbench._base.conversation import ToolCallAction
from castbench._records.store import ResultsStore, StoreError
from castbench._records.trial import TrialRecord
from castbench._run.api import evaluate
from castbench_analyses.frames import ROLES, steps_df, trials_df, verdicts_df
from tests.support import sqlite_url

TASKS = ["retail-test-0001", "retail-test-0002", "retail-test-0008"]
NOISY = "scripted:noisy?p=0.5"
FAILING = "scripted:noisy?p=0.9&recover=0"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """(db, a noisy run the rules critic corrects, a noisier run with no critic that fails trials),
    on three retail tasks."""
    db = sqlite_url(tmp_path_factory.mktemp("frames") / "runs.db")
    noisy = evaluate(domains="retail", policy=NOISY, critic="rules", trials=2, tasks=TASKS, db=db)
    failing = evaluate(domains="retail", policy=FAILING, trials=1, tasks=TASKS, db=db)
    return db, noisy.outcome.run_id, failing.outcome.run_id


def _records(db: str, run_id: str) -> list[TrialRecord]:
    return ResultsStore(db).trials(run_id)


def test_one_trial_row_per_stored_trial_with_its_values(runs: tuple[str, str, str]) -> None:
    db, noisy, _ = runs
    frame = trials_df(noisy, db=db)
    records = _records(db, noisy)
    assert len(frame) == len(records) == 6
    for row, record in zip(frame.itertuples(), records, strict=True):
        assert (row.run_id, row.policy, row.critic, row.user) == (noisy, NOISY, "rules", "scripted")
        assert (row.domain, row.task_id, row.trial_index, row.seed) == (
            record.domain,
            record.task_id,
            record.trial_index,
            record.seed,
        )
        assert record.grade is not None
        assert (row.reward, row.passed, row.end_reason) == (record.reward, record.passed, record.end_reason)
        assert row.failure_category == record.grade.failure_category
        assert row.strict_reward == record.grade.strict_reward
        assert row.steps == len(record.steps)
        assert row.revisions == sum(len(step.proposals) - 1 for step in record.steps)
    assert frame["revisions"].sum() > 0  # the critic sent proposals back: the run is not trivial


def test_a_failed_trial_says_why(runs: tuple[str, str, str]) -> None:
    db, _, failing = runs
    frame = trials_df(failing, db=db)
    records = _records(db, failing)
    assert not frame["passed"].all()
    for row, record in zip(frame.itertuples(), records, strict=True):
        assert record.grade is not None
        assert (row.reward, row.passed, row.critic) == (record.reward, record.passed, "none")
        assert (row.failure_category, row.state_ok) == (record.grade.failure_category, record.grade.state_ok)
        assert (row.failure_category is None) == row.passed


def test_pass_hat_1_from_the_frame_is_the_summarys(runs: tuple[str, str, str]) -> None:
    db, noisy, _ = runs
    summary = evaluate(domains="retail", policy=NOISY, critic="rules", trials=2, tasks=TASKS, db=db).summary
    per_task = trials_df(noisy, db=db).groupby("task_id")["passed"].mean()
    assert per_task.mean() == pytest.approx(summary.domains["retail"].pass_hat[1])


def test_unpriced_costs_are_nan_tokens_zero_and_flags_nullable(runs: tuple[str, str, str]) -> None:
    db, noisy, _ = runs
    frame = trials_df(noisy, db=db)
    costs = ["cost", *(f"{role}_cost" for role in ROLES)]
    assert all(frame[column].dtype == "float64" and frame[column].isna().all() for column in costs)
    assert frame["cost"].sum() == 0.0  # a sum skips what nobody priced
    assert (frame["input_tokens"] == 0).all() and (frame["policy_output_tokens"] == 0).all()
    assert frame["state_ok"].dtype == "boolean" and steps_df(noisy, db=db)["tool_error"].dtype == "boolean"


def test_one_step_row_per_stored_step(runs: tuple[str, str, str]) -> None:
    db, noisy, _ = runs
    frame = steps_df(noisy, db=db)
    records = _records(db, noisy)
    assert len(frame) == sum(len(record.steps) for record in records)
    first = records[0]
    mine = frame[(frame.task_id == first.task_id) & (frame.trial_index == first.trial_index)]
    assert list(mine["step"]) == [step.index for step in first.steps]
    calls = [step.action for step in first.steps if isinstance(step.action, ToolCallAction)]
    tool_rows = mine[mine.kind == "tool_call"]
    assert list(tool_rows["tool"]) == [call.name for call in calls]
    assert [json.loads(text) for text in tool_rows["arguments"]] == [call.arguments for call in calls]
    assert set(tool_rows["observed_from"]) == {"tool"}
    assert set(mine[mine.kind == "reply"]["observed_from"]) == {"user"}
    assert (frame["user_tool_calls"] == 0).all()  # retail's user has no tools of their own
    counted = frame[frame.kind == "tool_call"].groupby(["task_id", "trial_index"]).size()
    trials = trials_df(noisy, db=db).set_index(["task_id", "trial_index"])["tool_calls"]
    assert counted.sort_index().tolist() == trials.sort_index().tolist()


def test_one_verdict_row_per_judged_proposal_beside_the_labelers(runs: tuple[str, str, str]) -> None:
    db, noisy, _ = runs
    frame = verdicts_df(noisy, db=db)
    judged = [
        (record, step, proposal)
        for record in _records(db, noisy)
        for step in record.steps
        for proposal in step.proposals
        if proposal.verdict is not None
    ]
    assert len(frame) == len(judged) > 0
    for row, (record, step, proposal) in zip(frame.itertuples(), judged, strict=True):
        assert proposal.verdict is not None and proposal.label is not None
        assert (row.task_id, row.trial_index, row.step, row.round) == (
            record.task_id,
            record.trial_index,
            step.index,
            proposal.round,
        )
        assert (row.verdict, row.failure_type) == (proposal.verdict.verdict, proposal.verdict.failure_type)
        assert (row.labeler_verdict, row.label_reason) == (proposal.label.label, proposal.label.reason)
        assert row.executed == (proposal is step.proposals[-1] and step.action is not None)
    assert set(frame["verdict"]) == {"valid", "invalid"} and set(frame["critic"]) == {"rules"}
    rounds = set(zip(frame.task_id, frame.trial_index, frame.step, frame["round"], strict=True))
    revised = frame[~frame.executed & (frame.verdict == "invalid")]
    assert len(revised) > 0
    for row in revised.itertuples():  # a proposal sent back is followed by its revision, or blocked
        assert (row.task_id, row.trial_index, row.step, row.round + 1) in rounds or _blocked(frame, row)


def test_a_run_without_a_critic_has_no_verdict_rows_but_every_column(runs: tuple[str, str, str]) -> None:
    db, noisy, failing = runs
    empty = verdicts_df(failing, db=db)
    assert len(empty) == 0
    assert list(empty.columns) == list(verdicts_df(noisy, db=db).columns)


def test_several_runs_one_after_the_other_and_a_domain_filter(runs: tuple[str, str, str]) -> None:
    db, noisy, failing = runs
    both = trials_df([noisy, failing[:8]], db=db)  # a unique prefix names a run too
    assert list(both["run_id"]) == [noisy] * 6 + [failing] * 3
    assert list(both["policy"]) == [NOISY] * 6 + [FAILING] * 3
    assert len(trials_df(noisy, db=db, domains=["airline"])) == 0
    assert len(trials_df(noisy, db=db, domains=["retail"])) == 6
    latest = trials_df(db=db)  # `latest`: the run most recently written, as `runs show` takes it
    assert set(latest["run_id"]) == {ResultsStore(db).run("latest").id}


def test_an_unknown_run_is_the_stores_error(runs: tuple[str, str, str]) -> None:
    db, _, _ = runs
    with pytest.raises(StoreError, match="no run 'r-nothere'"):
        steps_df("r-nothere", db=db)


def test_pandas_is_imported_when_a_frame_is_built_not_before(tmp_path: Path) -> None:
    code = (
        "import sys, castbench, castbench_analyses.frames; print('pandas' in sys.modules); "
        "castbench_analyses.frames._frame([], ('reward',)); print('pandas' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["False", "True"], result.stderr


def _blocked(frame: Any, row: Any) -> bool:
    """Was the step of `row` blocked (its last proposal rejected and never executed)?"""
    same = frame[
        (frame.task_id == row.task_id) & (frame.trial_index == row.trial_index) & (frame.step == row.step)
    ]
    return not same["executed"].any()


def test_the_store_defaults_to_castbench_db_as_the_commands_do(
    runs: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, noisy, _ = runs
    monkeypatch.setenv("CASTBENCH_DB", db)
    assert trials_df(noisy).equals(trials_df(noisy, db=db))
