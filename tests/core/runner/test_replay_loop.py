"""`castbench verify` replays a trial through the `Episode` loop that played it (issue #39): the
record's proposals are stepped as an outside policy's are, a built-in user and critic run again,
and the agents castbench cannot run again (a model, a team's) are recorded stand-ins that fail
the replay, naming the step, when the loop asks for what the record does not have. So a record
edited at step k fails at step k; a critic's revisions and blocks replay as the loop gated them;
every built-in domain's oracle run, and a perturbed run, verify."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from castbench._base.conversation import ToolResultTurn, UserTurn
from castbench._records.config import RunConfig, Verification
from castbench._records.perturbations import Perturbations
from castbench._records.store import ResultsStore
from castbench._records.trial import StepRecord, TrialRecord
from castbench._results.publish.verify import verify_run
from castbench._run.api import build_config
from castbench._run.engine import run_eval
from castbench._trial.replay import replay_trial
from castbench.domain import load_domain
from tests.support import DOMAINS, sqlite_url

TASKS = [f"retail-test-{index:04d}" for index in range(1, 121, 12)]
TEAM_CRITIC = "teams_critic:Critic"
"""A critic castbench cannot run again: its verdicts are replayed as stored."""
TEAM_USER = "teams_user:User"
"""A user castbench cannot run again (as a model user): its words are replayed as stored."""


@dataclass(frozen=True)
class Run:
    config: RunConfig
    records: list[TrialRecord]


def _run(folder: Path, verification: Verification | None = None, **fields: Any) -> Run:
    config, agents = build_config(**fields)
    if verification is not None:
        config = config.model_copy(update={"verification": verification})
    store = ResultsStore(sqlite_url(folder / "runs.db"))
    return Run(config, store.trials(run_eval(config, agents, store).run_id))


@pytest.fixture(scope="module")
def critic_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The noisy policy under the rules critic, two rounds, a proposal rejected twice blocked."""
    return _run(
        tmp_path_factory.mktemp("critic"),
        Verification(rounds=2, on_exhausted="block"),
        domains="retail",
        policy="scripted:noisy?p=0.5",
        critic="rules",
        trials=2,
        seed=1,
        tasks=TASKS,
    )


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run(
        tmp_path_factory.mktemp("plain"), domains="retail", policy="scripted:noisy", trials=2, tasks=TASKS
    )


def _replay(run: Run, record: TrialRecord, **changed: Any) -> list[str]:
    domain = load_domain(record.domain)
    task = domain.task(record.task_id)
    config = run.config
    options: dict[str, Any] = {
        "run_seed": config.seed,
        "user": config.user,
        "traits": config.traits,
        "grading": config.grading_mode,
        "critic": config.critic,
        "perturbations": config.perturbations,
        "limits": config.limits,
        "verification": config.verification,
        **changed,
    }
    _, problems = replay_trial(domain, task, record, domain.replay(task), **options)
    return problems


def _with_step(record: TrialRecord, index: int, step: StepRecord) -> TrialRecord:
    steps = [step if s.index == index else s for s in record.steps]
    return record.model_copy(update={"steps": steps})


def _revised(run: Run) -> list[tuple[TrialRecord, StepRecord]]:
    """Steps with a revision: a first proposal the critic rejected, then the policy's next one."""
    return [(r, s) for r in run.records for s in r.steps if len(s.proposals) > 1]


def test_a_critic_run_with_revisions_and_blocks_replays_as_the_loop_gated_it(critic_run: Run) -> None:
    assert _revised(critic_run), "the critic asked for revisions"
    assert any(s.action is None for r in critic_run.records for s in r.steps), "and blocked a proposal"
    report = verify_run("critic", critic_run.config, critic_run.records)
    assert report.ok, report.describe()


def test_a_revision_dropped_from_the_record_fails_at_its_step(critic_run: Run) -> None:
    record, step = _revised(critic_run)[0]
    first = step.proposals[0]
    dropped = step.model_copy(update={"proposals": [first], "action": first.action})
    problems = _replay(critic_run, _with_step(record, step.index, dropped))
    assert (
        f"step {step.index} proposal 0: the critic asks for a revision the record does not have" in problems
    )


def test_a_team_critics_stored_verdicts_drive_the_loop(critic_run: Run) -> None:
    """Verdicts castbench cannot decide again are the loop's verdicts: the record replays with
    them, and a verdict edited so that the loop would not have asked for the revision the record
    holds, or removed, fails at its step."""
    for record in critic_run.records:
        assert _replay(critic_run, record, critic=TEAM_CRITIC) == []
    record, step = _revised(critic_run)[0]
    first = step.proposals[0]
    assert first.verdict is not None and first.verdict.flags
    accepted = first.verdict.model_copy(update={"verdict": "valid", "failure_type": None})
    edited = step.model_copy(
        update={"proposals": [first.model_copy(update={"verdict": accepted}), *step.proposals[1:]]}
    )
    problems = _replay(critic_run, _with_step(record, step.index, edited), critic=TEAM_CRITIC)
    assert (
        f"step {step.index} proposal 0: the replay ended the step where the record has a revision" in problems
    )
    removed = step.model_copy(
        update={"proposals": [first.model_copy(update={"verdict": None}), *step.proposals[1:]]}
    )
    problems = _replay(critic_run, _with_step(record, step.index, removed), critic=TEAM_CRITIC)
    assert problems[-1] == (
        f"step {step.index} proposal 0: the loop asks the critic for a verdict the record does not have"
    )


def test_a_built_in_critics_flipped_verdict_is_named_and_the_loop_keeps_its_own(critic_run: Run) -> None:
    record, step = _revised(critic_run)[0]
    first = step.proposals[0]
    assert first.verdict is not None
    flipped = first.verdict.model_copy(update={"verdict": "valid"})
    edited = step.model_copy(
        update={"proposals": [first.model_copy(update={"verdict": flipped}), *step.proposals[1:]]}
    )
    problems = _replay(critic_run, _with_step(record, step.index, edited))
    assert problems == [
        f"step {step.index} proposal 0 verdict: stored 'valid', replayed {_judged(first.verdict)!r}"
    ]


def _judged(verdict: Any) -> str:
    return f"invalid ({verdict.failure_type})" if verdict.flags else "valid"


def test_an_edit_at_step_k_fails_at_step_k(plain_run: Run) -> None:
    """A tool result or a user reply edited at step k: the first difference names step k, and the
    replay goes on as the loop played (later steps meet the true state, so nothing else differs)."""
    record = max(plain_run.records, key=lambda r: len(r.steps))
    results = [s for s in record.steps if isinstance(s.observation, ToolResultTurn) and s.action is not None]
    replies = [s for s in record.steps if isinstance(s.observation, UserTurn)]
    assert len(results) >= 2 and replies
    for step in [results[0], results[-1]]:
        assert isinstance(step.observation, ToolResultTurn)
        turn = step.observation.model_copy(update={"content": '{"edited": true}'})
        problems = _replay(
            plain_run, _with_step(record, step.index, step.model_copy(update={"observation": turn}))
        )
        assert problems and problems[0].startswith(f"step {step.index} {step.observation.name} result:"), (
            problems
        )
        assert all(not p.startswith("step ") or p.startswith(f"step {step.index} ") for p in problems), (
            problems
        )
    step = replies[0]
    turn = UserTurn(text="something else entirely")
    problems = _replay(
        plain_run, _with_step(record, step.index, step.model_copy(update={"observation": turn}))
    )
    assert problems[0].startswith(f"step {step.index} user reply: stored 'something else entirely'"), problems


def test_a_recorded_user_answers_as_stored_and_fails_where_the_record_has_no_answer(plain_run: Run) -> None:
    for record in plain_run.records:
        assert _replay(plain_run, record, user=TEAM_USER) == []
    record = next(r for r in plain_run.records if any(isinstance(s.observation, UserTurn) for s in r.steps))
    step = next(s for s in record.steps if isinstance(s.observation, UserTurn))
    silent = _with_step(record, step.index, step.model_copy(update={"observation": None}))
    problems = _replay(plain_run, silent, user=TEAM_USER)
    assert f"step {step.index}: the loop asks the user for a reply the record does not have" in problems


def test_a_record_cut_before_the_user_stops_fails(plain_run: Run) -> None:
    """The loop decides a user's stop itself: a record cut before it, still claiming it, differs."""
    record = next(r for r in plain_run.records if r.end_reason == "user_stop" and len(r.steps) > 2)
    cut = record.model_copy(update={"steps": record.steps[:-2]})
    problems = _replay(plain_run, cut)
    assert problems == [f"end: stored user_stop, but the loop goes on after step {len(cut.steps) - 1}"]


def test_a_perturbed_run_replays_with_its_faults_and_reworded_users(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        domains="retail",
        policy="scripted:noisy",
        trials=2,
        tasks=TASKS[:5],
        perturbations=Perturbations(tool_faults=0.3, user=["typos", "reorder"], env=["field_order"]),
    )
    assert any(s.fault for r in run.records for s in r.steps), "faults were injected"
    report = verify_run("perturbed", run.config, run.records)
    assert report.ok, report.describe()
    for record in run.records:  # a recorded user's words are stored as the agent heard them
        assert _replay(run, record, user=TEAM_USER) == []


@pytest.mark.parametrize("name", DOMAINS)
def test_every_built_in_domains_oracle_run_verifies(name: str, tmp_path: Path) -> None:
    tasks = [task.id for task in load_domain(name).tasks("test")[:4]]
    run = _run(tmp_path, domains=name, policy="oracle", trials=1, tasks=tasks)
    assert all(r.reward == 1.0 for r in run.records)
    report = verify_run(name, run.config, run.records)
    assert report.ok and report.trials == len(tasks), report.describe()


def test_a_recorded_users_device_steps_are_taken_again(tmp_path: Path) -> None:
    """τ²'s dual control: the steps a user took on its own side change the trial's state, so a
    user replayed from the record takes them again; without them the state, and the reward, differ."""
    tasks = ["telecom-test-0001", "telecom-test-0004", "telecom-test-0005"]
    run = _run(tmp_path, domains="telecom", policy="oracle", trials=1, tasks=tasks)
    turns = [s.observation for r in run.records for s in r.steps if isinstance(s.observation, UserTurn)]
    assert any(turn.tool_calls for turn in turns), "the users took device steps"
    for record in run.records:
        assert _replay(run, record, user=TEAM_USER) == []
    record = next(
        r
        for r in run.records
        if any(isinstance(s.observation, UserTurn) and s.observation.tool_calls for s in r.steps)
    )
    steps = [
        s.model_copy(update={"observation": s.observation.model_copy(update={"tool_calls": ()})})
        if isinstance(s.observation, UserTurn)
        else s
        for s in record.steps
    ]
    problems = _replay(run, record.model_copy(update={"steps": steps}), user=TEAM_USER)
    assert "stored reward 1.0, re-graded 0.0" in problems, problems
