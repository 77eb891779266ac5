"""Required outputs are found in the agent's replies whatever the case, currency sign or thousands
separators; a failed trial that claimed success (or looked done) is recorded as surface success."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._grading import grade_trial
from castbench._grading.outputs import claims_success, missing_outputs
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench.domain import Domain, load_domain
from tests.core.toy import add_call, build_toy_domain, toy_task


@pytest.fixture
def toy(tmp_path: Path) -> Domain:
    return build_toy_domain(tmp_path, [toy_task("t-1", [add_call("x", 1)], required_outputs=["$1,234.50"])])


@pytest.mark.parametrize(
    "reply",
    [
        "Your total is $1,234.50.",
        "your total is 1234.50",
        "YOUR TOTAL IS $1234.50!",
        "the total:\n  1,234.50 dollars",
    ],
)
def test_required_output_found_however_written(reply: str) -> None:
    assert missing_outputs(["$1,234.50"], [reply]) == []
    assert missing_outputs(["Tracking 1Z999"], [f"Tracking 1z999. {reply}"]) == []


def test_required_outputs_missing_are_listed_in_order() -> None:
    required = ["#W123", "$15.00", "delivered"]
    assert missing_outputs(required, ["Order #w123 was shipped.", "It costs 15.00."]) == ["delivered"]
    assert missing_outputs(required, []) == required
    assert missing_outputs(["$1,234.50"], ["it is 1,234.6"]) == ["$1,234.50"]
    assert missing_outputs(["$1,234.50"], ["it is 1,234.5"], "tau") == ["$1,234.50"]


@pytest.mark.parametrize(
    ("required", "reply"),
    [
        ("82.00", "The total is 182.00."),  # a number is a whole token
        ("82.00", "Refund: 82.001"),
        ("cancelled", "Your order was not cancelled."),  # a negated word is not said
        ("cancelled", "It hasn't been cancelled yet."),
        ("delivered", "The parcel is undelivered."),  # whole words only
        ("999", "Tracking 1Z999."),
        ("#W123", "Order #W1234 is pending."),
    ],
)
def test_a_wrong_answer_does_not_pass_where_tau_substring_would(required: str, reply: str) -> None:
    assert missing_outputs([required], [reply]) == [required]
    assert missing_outputs([required], [reply], "tau") == []


@pytest.mark.parametrize(
    ("required", "reply"),
    [
        ("82.00", "That comes to $82."),  # numbers as numbers: currency, trailing zeros
        ("$1,234.50", "It is 1234.5 dollars"),
        ("1234", "You owe $1,234."),
        ("cancelled", "No, it is cancelled."),  # the negation sits in another clause
        ("#W123", "Order W123 is on its way."),
        ("2026-05-22", "on 2026-05-22, at noon"),
    ],
)
def test_the_same_answer_written_another_way_passes(required: str, reply: str) -> None:
    assert missing_outputs([required], [reply]) == []


def test_a_negation_in_one_reply_does_not_reach_into_the_next() -> None:
    assert missing_outputs(["cancelled"], ["Is it not?", "cancelled, yes."]) == []


def test_outputs_may_be_spread_over_replies() -> None:
    assert missing_outputs(["#W1", "12.00"], ["Order #W1 it is.", "That was $12.00."]) == []


def test_claims_success() -> None:
    assert claims_success(["Hello", "Your order has been cancelled."])
    assert claims_success(["Done! Is there anything else?"])
    assert not claims_success(["Sorry, I cannot cancel it: it has been delivered."])
    assert not claims_success(["Could you tell me your name?"])
    assert not claims_success(["It has been updated.", "x", "Anything else?"])  # only the last two count


def _grade(toy: Domain, do: bool, replies: list[str], **signals: bool):  # type: ignore[no-untyped-def]
    task = toy.tasks("test")[0]
    final = toy.fresh_database()
    if do:
        toy.toolkit.call(final, "add", {"name": "x", "amount": 1})
    options = {"ended_cleanly": True, "made_write": do, "saw_tool_error": False} | signals
    return grade_trial(task, final, toy.replay(task), replies, **options)


def test_pass_needs_state_and_outputs(toy: Domain) -> None:
    passed = _grade(toy, True, ["Done: your total is 1234.50."])
    assert passed.reward == 1.0 and passed.state_ok and passed.outputs_ok
    assert passed.failure_category is None and not passed.surface_success

    no_output = _grade(toy, True, ["It has been done."])
    assert no_output.reward == 0.0 and no_output.state_ok and not no_output.outputs_ok
    assert no_output.missing_outputs == ["$1,234.50"] and no_output.failure_category == "incomplete_reply"


def test_a_failed_trial_that_claims_success_is_surface_success(toy: Domain) -> None:
    grade = _grade(
        toy, False, ["Your counter has been updated successfully. Total 1,234.50."], made_write=False
    )
    assert grade.reward == 0.0 and not grade.state_ok
    assert [(d.table, d.key, d.field, d.expected, d.got) for d in grade.diff] == [
        ("counters", "x", "value", 6, 5)
    ]
    assert grade.surface.claimed_success and grade.surface_success
    assert grade.failure_category == "missing_state_change"


def test_a_clean_end_after_a_write_without_errors_looks_successful(toy: Domain) -> None:
    final = toy.fresh_database()
    toy.toolkit.call(final, "add", {"name": "x", "amount": 5})
    task = toy.tasks("test")[0]
    grade = grade_trial(
        task,
        final,
        toy.replay(task),
        ["Total 1234.50"],
        ended_cleanly=True,
        made_write=True,
        saw_tool_error=False,
    )
    assert grade.reward == 0.0 and not grade.surface.claimed_success and grade.surface_success
    assert grade.failure_category == "wrong_state_update"

    seen_error = grade_trial(
        task,
        final,
        toy.replay(task),
        ["Total 1234.50"],
        ended_cleanly=True,
        made_write=True,
        saw_tool_error=True,
    )
    assert not seen_error.surface_success and seen_error.failure_category == "tool_error_unrecovered"


def test_an_honest_failure_is_not_surface_success(toy: Domain) -> None:
    grade = _grade(toy, False, ["Sorry, I cannot do that."], ended_cleanly=False, made_write=False)
    assert grade.reward == 0.0 and not grade.surface_success


def test_surface_success_is_recorded_for_a_trial_and_counted(db_url: str) -> None:
    retail = load_domain("retail")
    cancel = next(task for task in retail.tasks("test") if task.family == "cancel_pending")
    db = db_url
    result = evaluate(
        domains="retail", policy="tests.core.fixtures_agents:LiarPolicy", trials=2, tasks=[cancel.id], db=db
    )
    records = ResultsStore(db).trials(result.outcome.run_id)
    assert len(records) == 2
    for record in records:
        assert record.status == "scored" and record.reward == 0.0
        assert record.grade is not None and record.grade.surface.claimed_success
        assert record.grade.surface_success and record.grade.failure_category == "missing_state_change"
        assert record.grade.diff and record.grade.diff[0].table == "orders"
    report = result.summary.domains["retail"]
    assert report.surface_success == 2 and report.failure_categories == {"missing_state_change": 2}
