"""A bad trial is that trial's failure, never the run's: agents that raise (in `__init__` too),
return the wrong type or something that cannot be stored end their own trial with the reason
stored and shown; our own bugs in one trial are that trial's `harness_error`."""

from __future__ import annotations

from pathlib import Path

import pytest

from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._run.api import evaluate
from castbench._trial import episode
from castbench._trial.rollout import Verification
from castbench.domain import load_domain
from tests.support import invoke, sqlite_url

HOSTILE = "tests.core.hostile_agents"
TASKS = 2


def _tasks() -> list[str]:
    return [task.id for task in load_domain("retail").tasks("test")[:TASKS]]


def _run(tmp_path: Path, **options: object) -> tuple[str, str, list[TrialRecord]]:
    db = sqlite_url(tmp_path / "runs.db")
    options = {"policy": f"{HOSTILE}:HostilePolicy?mode=none", **options}
    try:
        evaluate(domains="retail", tasks=_tasks(), trials=2, db=db, **options)  # type: ignore[arg-type]
    except ValueError as exc:  # every task incomplete: nothing to summarise, but all stored
        assert "no complete task" in str(exc)
    store = ResultsStore(db)
    run = store.run("latest")
    return db, run.status, store.trials(run.id)


def _by_trial(records: list[TrialRecord]) -> dict[int, list[TrialRecord]]:
    return {index: [r for r in records if r.trial_index == index] for index in (0, 1)}


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("init", "the team's policy cannot start"),
        ("not_json", "cannot be stored"),
        ("exit", "exited"),  # in its worker process: the worker ends, the trial records it
    ],
)
def test_a_policy_failure_ends_its_trial_as_agent_error_and_the_run_goes_on(
    tmp_path: Path, mode: str, reason: str
) -> None:
    db, status, records = _run(tmp_path, policy=f"{HOSTILE}:HostilePolicy?mode={mode}&on_trial=0")
    assert status == "complete" and len(records) == 2 * TASKS
    hostile, fine = _by_trial(records)[0], _by_trial(records)[1]
    for record in hostile:
        assert (record.status, record.end_reason, record.reward) == ("scored", "agent_error", 0.0)
        assert record.error is not None and reason in record.error
    assert all(record.end_reason == "user_stop" and record.error is None for record in fine)
    shown = invoke("runs", "show", "latest", "--db", db, "--failures", "0")
    assert shown.exit_code == 0, shown.output
    assert reason in shown.output and "agent_error" in shown.output


def test_a_critic_returning_the_wrong_type_fails_its_trial(tmp_path: Path) -> None:
    _, status, records = _run(
        tmp_path, critic=f"{HOSTILE}:HostileCritic", verification=Verification(scope="all")
    )
    assert status == "stopped"  # every trial failed the same way: the run stopped early
    assert 3 <= len(records) < 2 * TASKS and {r.end_reason for r in records} == {"agent_error"}
    assert all("critic returned str from verdict, not Verdict" in (r.error or "") for r in records)


@pytest.mark.parametrize("mode", ["open", "reply"])
def test_a_custom_user_that_raises_leaves_its_trial_unscored(tmp_path: Path, mode: str) -> None:
    _, status, records = _run(tmp_path, user=f"{HOSTILE}:HostileUser?mode={mode}")
    assert status == "incomplete" and len(records) == 2 * TASKS  # the run goes on; unscored trials remain
    for record in records:
        assert (record.status, record.end_reason, record.reward) == ("error", "agent_error", None)
        assert "the team's user simulator broke" in (record.error or "")


def test_a_bug_of_ours_in_one_trial_is_that_trials_harness_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = episode.grade_trial

    def grade_with_a_bug(*args: object, **kwargs: object) -> object:
        if grade_with_a_bug.calls == 0:  # type: ignore[attr-defined]
            grade_with_a_bug.calls += 1  # type: ignore[attr-defined]
            raise KeyError("a grader bug")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    grade_with_a_bug.calls = 0  # type: ignore[attr-defined]
    monkeypatch.setattr(episode, "grade_trial", grade_with_a_bug)
    _, status, records = _run(tmp_path)
    assert status == "incomplete" and len(records) == 2 * TASKS  # one trial left unscored
    broken = [r for r in records if r.end_reason == "harness_error"]
    assert len(broken) == 1 and broken[0].status == "error" and "a grader bug" in (broken[0].error or "")
    assert sum(r.end_reason == "user_stop" for r in records) == 2 * TASKS - 1
