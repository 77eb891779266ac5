"""`castbench runs list|show`, `tasks list`, `domains list|validate` end to end (CliRunner)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from castbench._records.store import ResultsStore
from castbench.domain import load_domain
from tests.core.toy import add_call, build_toy_domain, register_toy, toy_task
from tests.support import invoke, sqlite_url

TASKS = "retail-test-0001,retail-test-0006"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with one oracle run and one noisy run that has failures."""
    url = sqlite_url(tmp_path_factory.mktemp("cli") / "r.db")
    for policy in ("oracle", "scripted:noisy?p=0.9&recover=0"):
        result = invoke(
            "eval", "--domain", "retail", "--policy", policy, "--trials", "2", "--tasks", TASKS, "--db", url
        )
        assert result.exit_code == 0, result.output
    return url


def test_runs_list(db: str) -> None:
    result = invoke("runs", "list", "--db", db)
    assert result.exit_code == 0, result.output
    assert "oracle" in result.output and "scripted:noisy?p=0.9&recover=0" in result.output
    assert result.output.count("complete") == 2 and result.output.count("r-") == 2


def test_runs_show_latest_has_the_per_task_table_and_failures(db: str) -> None:
    result = invoke("runs", "show", "latest", "--db", db)
    assert result.exit_code == 0, result.output
    assert "pass^1" in result.output and "pass^2" in result.output
    assert "retail-test-0001" in result.output and "retail-test-0006" in result.output
    assert "state diff (expected vs got)" in result.output  # a failed trial explains itself


def test_runs_show_by_id_and_prefix(db: str) -> None:
    first, second = (row.id for row in ResultsStore(db).runs())
    by_id = invoke("runs", "show", first, "--db", db)
    assert by_id.exit_code == 0 and f"run {first}" in " ".join(by_id.output.split())
    prefix = next(first[:n] for n in range(3, len(first)) if not second.startswith(first[:n]))
    by_prefix = invoke("runs", "show", prefix, "--db", db)
    assert by_prefix.exit_code == 0 and f"run {first}" in " ".join(by_prefix.output.split())
    ambiguous = invoke("runs", "show", "r-", "--db", db)
    assert ambiguous.exit_code == 2 and "is ambiguous" in ambiguous.output


def test_runs_show_one_task_step_by_step(db: str) -> None:
    result = invoke("runs", "show", "latest", "--task", "retail-test-0006", "--db", db)
    assert result.exit_code == 0, result.output
    assert "retail retail-test-0006 #0" in result.output and "retail retail-test-0006 #1" in result.output
    assert "user: Hello, I'd like to exchange" in result.output and "agent:" in result.output
    one = invoke("runs", "show", "latest", "--task", "retail-test-0006", "--trial", "1", "--db", db)
    assert "#1" in one.output and "#0" not in one.output


def test_runs_show_errors_exit_2(db: str) -> None:
    missing_run = invoke("runs", "show", "r-nope", "--db", db)
    assert missing_run.exit_code == 2 and "no run 'r-nope'" in missing_run.output
    missing_task = invoke("runs", "show", "latest", "--task", "retail-test-0999", "--db", db)
    assert missing_task.exit_code == 2 and "has no trials of task 'retail-test-0999'" in missing_task.output


def test_tasks_list() -> None:
    result = invoke("tasks", "list", "--domain", "retail", "--family", "cancel_pending")
    assert result.exit_code == 0, result.output
    cancel = [t.id for t in load_domain("retail").tasks("test") if t.family == "cancel_pending"]
    assert all(task_id in result.output for task_id in cancel)
    assert "exchange_items" not in result.output
    train = invoke("tasks", "list", "--domain", "retail", "--split", "train")
    assert train.exit_code == 0 and "retail-train-" in train.output


def test_domains_list() -> None:
    result = invoke("domains", "list")
    assert result.exit_code == 0, result.output
    retail = load_domain("retail")
    assert "retail" in result.output and retail.version in result.output
    assert f"test {len(retail.tasks('test'))}" in result.output


def test_domains_validate_a_good_domain() -> None:
    result = invoke("domains", "validate", "--domain", "retail")
    assert result.exit_code == 0, result.output
    assert f"retail {load_domain('retail').version}" in result.output and "tasks valid" in result.output


def test_domains_validate_names_each_broken_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = [
        toy_task("fine", [add_call("x", 1)]),
        toy_task("unknown-tool", [{"name": "frobnicate", "arguments": {}}]),
        toy_task("invalid-argument", [{"name": "add", "arguments": {"name": "x", "amount": "many"}}]),
        toy_task("erroring-call", [add_call("x", -100)]),
        toy_task("changes-nothing", [{"name": "get_counter", "arguments": {"name": "x"}}]),
        toy_task(
            "order-dependent",
            [{"name": "set_value", "arguments": {"name": "x", "value": v}} for v in (1, 2)],
        ),
    ]
    register_toy(monkeypatch, build_toy_domain(tmp_path, tasks, name="brokentoy"))
    result = invoke("domains", "validate", "--domain", "brokentoy")
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    assert "brokentoy 1-0: 5 problem(s)" in output
    assert "task unknown-tool: action 0: Error: unknown tool 'frobnicate'" in output
    assert "task invalid-argument: action 0: Error: invalid arguments for add: argument 'amount'" in output
    assert "task erroring-call: action 0 add: Error: a counter cannot go below zero" in output
    assert "task changes-nothing: outcome is 'change' but replaying its actions changes nothing" in output
    assert "task order-dependent: outcome depends on the order of its writes; mark it 'ordered'" in output
    assert "task fine" not in output


@pytest.mark.parametrize("published", [False, True])
def test_domains_validate_fails_a_task_refusing_everything_passes(
    published: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task whose gold changes a field its grading ignores: the blanket-refusal floor passes it
    without a tool call. A problem named with its task id; in a published set (graded as
    published), listed without failing."""
    tasks = [
        toy_task("fine", [add_call("x", 1)]),
        toy_task("refusable", [add_call("x", 1)], grading={"ignore_fields": ["counters.value"]}),
    ]
    domain = build_toy_domain(tmp_path, tasks, name="refusabletoy")
    register_toy(monkeypatch, dataclasses.replace(domain, requires_earned=not published))
    result = invoke("domains", "validate", "--domain", "refusabletoy")
    output = " ".join(result.output.split())
    said = (
        "refusabletoy task refusable: refusing everything passes it (scripted:refuse scored 1 with no "
        "tool call): its grading checks nothing its request needs"
    )
    assert said in output and "task fine" not in output, output
    if published:
        assert result.exit_code == 0, result.output
        assert "1 task(s) refusing everything passes, kept as the published set grades them" in output
    else:
        assert result.exit_code == 1, result.output
        assert "refusabletoy 1-0: 1 problem(s)" in output


def test_runs_show_says_why_a_refusal_was_not_earned(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'refuse.db'}"
    ran = invoke(
        "eval",
        "--domain",
        "retail",
        "--policy",
        "scripted:refuse",
        "--trials",
        "1",
        "--tasks",
        TASKS,
        "--db",
        db,
        "--details",
    )
    assert ran.exit_code == 0, ran.output
    assert "floor: refuse" in ran.output and "floor: lookup-refuse" in ran.output
    shown = invoke("runs", "show", "latest", "--task", "retail-test-0001", "--db", db)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "not earned: look-up not made: find_user_id_by" in text
    assert "change not offered before the decline" in text
