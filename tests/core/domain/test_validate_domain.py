"""`validate_domain` replays every task's ground truth and names each broken task and why."""

from __future__ import annotations

from pathlib import Path

from castbench.domain import load_domain
from castbench_authoring.validate import validate_domain, validate_task
from tests.core.toy import add_call, build_toy_domain, toy_task


def _set(name: str, value: int) -> dict:
    return {"name": "set_value", "arguments": {"name": name, "value": value}}


_READ_X = {"name": "get_counter", "arguments": {"name": "x"}}
_LOOK_UP_X = {"lookups": [{"any_of": [_READ_X]}]}

BROKEN = [
    toy_task("ok-independent", [add_call("x", 1), add_call("y", 2)]),
    toy_task("ok-ordered", [_set("x", 1), _set("x", 2)], ordered=True),
    toy_task("ok-read-only", [_READ_X], outcome="no_change", earned=_LOOK_UP_X),
    toy_task("bad-unknown-tool", [{"name": "frobnicate", "arguments": {}}]),
    toy_task("bad-argument", [{"name": "add", "arguments": {"name": "x", "amount": "lots"}}]),
    toy_task("bad-erroring-call", [add_call("x", -100)]),
    toy_task("bad-changes-nothing", [{"name": "get_counter", "arguments": {"name": "x"}}]),
    toy_task("bad-no-change-that-changes", [add_call("x", 1)], outcome="refuse"),
    toy_task("bad-order-dependent", [_set("x", 1), _set("x", 2)]),
    toy_task("bad-order-fails", [add_call("x", 3), add_call("x", -7)]),
    toy_task("bad-empty-output", [add_call("x", 1)], required_outputs=["  "]),
    toy_task("bad-free-refusal", [_READ_X], outcome="refuse"),
    toy_task("bad-nothing-to-look-up", [_READ_X], outcome="no_change", earned={"lookups": []}),
    toy_task("bad-reasonless-refusal", [_READ_X], outcome="refuse", earned=_LOOK_UP_X),
    toy_task(
        "bad-lookup-outside-truth",
        [_READ_X],
        outcome="no_change",
        earned={"lookups": [{"any_of": [{"name": "get_counter", "arguments": {"name": "y"}}]}]},
    ),
    toy_task(
        "bad-unknowable-reason",
        [_READ_X],
        outcome="refuse",
        earned={**_LOOK_UP_X, "reasons": [{"any_of": ["the moon is full"]}]},
    ),
    toy_task("bad-earned-change", [add_call("x", 1)], earned=_LOOK_UP_X),
]

EXPECTED = {
    "bad-unknown-tool": "action 0: Error: unknown tool 'frobnicate'",
    "bad-argument": "action 0: Error: invalid arguments for add: argument 'amount'",
    "bad-erroring-call": "action 0 add: Error: a counter cannot go below zero",
    "bad-changes-nothing": "outcome is 'change' but replaying its actions changes nothing",
    "bad-no-change-that-changes": "outcome is 'refuse' but replaying its actions changes the state",
    "bad-order-dependent": "outcome depends on the order of its writes; mark it 'ordered'",
    "bad-order-fails": "writes fail in another order",
    "bad-empty-output": "empty required output",
    "bad-free-refusal": "outcome is 'refuse' but the task has no 'earned' spec",
    "bad-nothing-to-look-up": "field 'earned.lookups': names no look-up",
    "bad-reasonless-refusal": "field 'earned.reasons': a refusal must name its reason",
    "bad-lookup-outside-truth": "field 'earned.lookups[0]': none of its calls is in the ground truth",
    "bad-unknowable-reason": "field 'earned.reasons[0]': none of ['the moon is full'] is shown",
    "bad-earned-change": "field 'earned': a 'change' task is graded on its state",
}


def test_each_broken_task_is_named_with_its_problem(tmp_path: Path) -> None:
    report = validate_domain(build_toy_domain(tmp_path, BROKEN))
    assert not report.ok and report.counts == {"test": len(BROKEN)}
    by_task: dict[str, list[str]] = {}
    for problem in report.problems:
        task_id = problem.split("task ", 1)[1].split(":", 1)[0]
        by_task.setdefault(task_id, []).append(problem)
    assert sorted(by_task) == sorted(EXPECTED)
    for task_id, expected in EXPECTED.items():
        assert any(expected in problem for problem in by_task[task_id]), (task_id, by_task[task_id])


def test_a_good_domain_is_valid(tmp_path: Path) -> None:
    report = validate_domain(build_toy_domain(tmp_path, BROKEN[:3]))
    assert report.ok and report.problems == [] and report.counts == {"test": 3}


def test_the_retail_domain_is_valid() -> None:
    report = validate_domain(load_domain("retail"))
    assert report.ok, report.problems[:5]
    assert report.counts["test"] == len(load_domain("retail").tasks("test"))


def test_a_broken_task_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    duplicate = [toy_task("t-1", [add_call("x", 1)]), toy_task("t-1", [add_call("y", 1)])]
    report = validate_domain(build_toy_domain(tmp_path, duplicate))
    assert not report.ok and "task t-1: duplicate task id" in report.problems[0]


def test_a_write_that_rewrites_the_same_value_changes_nothing(tmp_path: Path) -> None:
    domain = build_toy_domain(tmp_path, [toy_task("bad-noop-write", [_set("x", 5)])])
    problems = validate_task(domain, domain.tasks("test")[0])
    assert any("changes nothing" in problem for problem in problems)


def test_a_crashing_ground_truth_call_is_a_problem_of_its_task(tmp_path: Path) -> None:
    domain = build_toy_domain(
        tmp_path, [toy_task("bad-crash", [{"name": "crash", "arguments": {"name": "x"}}])]
    )
    try:
        report = validate_domain(domain)
    except Exception as exc:  # what happens today
        raise AssertionError(f"validate_domain raised {exc!r}") from exc
    assert any("bad-crash" in problem for problem in report.problems)
