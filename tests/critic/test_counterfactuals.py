"""Counterfactual branches at critic verdicts: what a flag or a pass did to its trial.

The three effects the scripted critics must show, on the noisy policy's mistakes (keyed draws, so
two branches draw the same for every decision they share): the noisy critic's false flags cost
trials, the rules critic's flags save trials, and the oracle critic's flags never cost one (a
right flag of a gold value a mistaken read left unrevealed is answered by looking it up). Then: a
rerun gives the same branches; a pass's branch carries a bare critique (nothing privileged
reaches the policy); an agent that gives other outputs for the same seed and views is refused,
named; the command prints the figures.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from castbench._agents.registry import resolve
from castbench._agents.views import PolicyView
from castbench._base.conversation import Action, ReplyAction, ToolCallAction
from castbench._records.store import ResultsStore
from castbench._records.trial import TrialRecord
from castbench._run.api import build_config, evaluate
from castbench._run.plan import plan_trials
from castbench._run.work import ExpectedStates, run_job
from castbench._trial.rollout import AgentSet
from castbench_analyses.branches import Branch, BranchPoint, TrialBranches
from castbench_analyses.counterfactual import BARE_CRITIQUE, NotBranchable, branch_run, branch_trial
from castbench_analyses.counterfactual_metrics import summarize_branches
from tests.support import invoke, sqlite_url, without_durations

POLICY = "scripted:noisy?draws=keyed"
NOISY_CRITIC = "scripted:noisy?false_flag=0.3&miss=0.1&draws=keyed"
TASKS = 30


def _branched(
    critic: str, domain: str = "retail", trials: int = 2
) -> tuple[list[TrialRecord], list[TrialBranches]]:
    config, agents = build_config(policy=POLICY, critic=critic, domains=domain, trials=trials, seed=0)
    expected = ExpectedStates()
    jobs = list(plan_trials(config))[: TASKS * trials]
    records = [run_job(job, config, agents, expected) for job in jobs]
    return records, [branch_trial(r, config, agents, j, expected) for r, j in zip(records, jobs, strict=True)]


def _cells(trials: list[TrialBranches], cell: str) -> dict[str, int]:
    return summarize_branches(trials, resamples=200).cells[cell].model_dump()  # type: ignore[index]


def test_the_noisy_critics_false_flags_cost_trials() -> None:
    _, trials = _branched(NOISY_CRITIC)
    false_flags = _cells(trials, "false_flag")
    assert false_flags["cost"] > 0
    assert false_flags["cost"] > false_flags["saved"]


def test_the_rules_critic_saves_trials_from_the_noisy_policys_mistakes() -> None:
    _, trials = _branched("rules")
    summary = summarize_branches(trials, resamples=500)
    true_flags = summary.cells["true_flag"]
    assert true_flags.saved > true_flags.cost
    assert summary.net_flags.low is not None and summary.net_flags.low > 0


@pytest.mark.parametrize("domain", ["retail", "airline", "telecom", "telehealth"])
def test_the_oracle_critics_flags_cost_no_trial(domain: str) -> None:
    """On every castbench domain. The case that used to cost one: a mistaken read that went
    through (the wrong order looked up) left a value of the next gold call unrevealed; the oracle
    rightly flagged the call as a hallucination, and the noisy policy, seeing its gold call
    rejected, complied with a fresh mistake, while the branch ran the lucky guess and passed. The
    policy now looks the value up (`NoisyPolicy._lost_reads`), so both branches pass."""
    _, trials = _branched("oracle", domain)
    summary = summarize_branches(trials, resamples=500)
    assert summary.flags.cost == 0, summary.cells
    assert summary.cells["false_flag"].verdicts == 0  # the oracle flags only what the labeler calls invalid
    assert summary.cells["true_flag"].saved > 0


def test_a_right_flag_of_an_unrevealed_gold_value_is_answered_by_looking_it_up() -> None:
    """retail-test-0030: the noisy policy looked up the wrong order, then proposed the gold return
    with an item id only the right order shows. Flagged, it looks the right order up and returns
    the item: the trial passes, as its branch (the guess executed) does."""
    records, trials = _branched("oracle", "retail")
    record = next(r for r in records if (r.task_id, r.trial_index) == ("retail-test-0030", 0))
    flagged = [
        proposal
        for step in record.steps
        for proposal in step.proposals
        if proposal.verdict is not None and proposal.verdict.flags and "1314456325" in str(proposal.action)
    ]
    assert flagged and flagged[-1].label is not None and flagged[-1].label.failure_type == "hallucination"
    executed = [step.action for step in record.steps if isinstance(step.action, ToolCallAction)]
    assert ToolCallAction(name="get_order_details", arguments={"order_id": "#W1384103"}) in executed
    assert record.strict_passed
    trial = next(t for t in trials if (t.task_id, t.trial_index) == ("retail-test-0030", 0))
    assert all(branch.effect != "cost" for branch in trial.branches)


def test_a_rerun_gives_the_same_branches_and_a_pass_branch_is_a_bare_flag() -> None:
    first, second = _branched(NOISY_CRITIC, trials=1)[1], _branched(NOISY_CRITIC, trials=1)[1]
    assert [without_durations(t.model_dump(mode="json")) for t in first] == [
        without_durations(t.model_dump(mode="json")) for t in second
    ]
    passes = [b for t in first for b in t.branches if not b.point.flagged and b.played]
    assert passes
    for branch in passes:
        verdict = branch.steps[0].proposals[branch.point.round].verdict
        assert verdict is not None and verdict.flags
        assert (verdict.explanation, verdict.failure_type, verdict.suggested_fix) == (
            BARE_CRITIQUE,
            "none",
            None,
        )


def test_a_branch_plays_the_flagged_action_as_proposed() -> None:
    """The policy stands by the flagged proposal: it comes back, unrevised, in the step's later
    rounds (the critic asked as in any trial: to it, a policy that insists) and executes when the
    rounds run out; the policy never reads the critique."""
    _, trials = _branched("oracle", trials=1)
    flags = [b for t in trials for b in t.branches if b.point.flagged and b.played]
    assert flags
    for branch in flags:
        step = branch.steps[0]
        flagged = step.proposals[branch.point.round]
        assert flagged.verdict is not None and flagged.verdict.flags  # the critic's own flag, kept
        again = step.proposals[branch.point.round + 1 :]
        assert len(step.proposals) == 3 and again  # the run's 3 rounds, the rest stood by
        assert all(p.action == flagged.action and p.verdict is not None for p in again)
        assert step.action == flagged.action  # executed as proposed, no revision


def test_the_last_rounds_flag_under_execute_is_not_played() -> None:
    _, trials = _branched("oracle", trials=1)
    last = [b for t in trials for b in t.branches if b.point.round == 2]
    assert last and all(not b.played and b.effect == "unchanged" for b in last)


_draws = itertools.count()


class FlakyPolicy:
    """Answers differently every time it is created: it cannot be re-created at a branch point."""

    def __init__(self, briefing: object) -> None:
        self.draw = next(_draws)

    def propose(self, view: PolicyView) -> Action:
        return ReplyAction(text=f"Attempt {self.draw}: how can I help?")


def test_an_agent_that_does_not_replay_is_refused_named() -> None:
    config, _ = build_config(
        policy="oracle", critic="scripted:noisy?false_flag=1", domains="retail", trials=1
    )
    agents = AgentSet(
        policy=resolve("policy", "tests.critic.test_counterfactuals:FlakyPolicy", in_process=True),
        user=resolve("user", "scripted"),
        critic=resolve("critic", "scripted:noisy?false_flag=1"),
    )
    config = config.model_copy(
        update={
            "policy": "tests.critic.test_counterfactuals:FlakyPolicy",
            "verification": config.verification.model_copy(update={"scope": "all"}),
        }
    )
    job = next(iter(plan_trials(config)))
    expected = ExpectedStates()
    record = run_job(job, config, agents, expected)
    assert any(p.verdict is not None for s in record.steps for p in s.proposals)
    with pytest.raises(NotBranchable, match=r"the policy '.*FlakyPolicy' answered otherwise"):
        branch_trial(record, config, agents, job, expected)


class CritiqueAverse:
    """Replies the same every time; raises when it is given a critique."""

    def __init__(self, briefing: object) -> None:
        pass

    def propose(self, view: PolicyView) -> Action:
        if view.critique is not None:
            raise RuntimeError("a critique!")
        return ReplyAction(text="Hello, how can I help?")


def test_an_agent_that_fails_in_a_branch_fails_that_branch_only() -> None:
    spec = "tests.critic.test_counterfactuals:CritiqueAverse"
    config, _ = build_config(
        policy="oracle", critic="oracle", domains="retail", trials=1, tasks="retail-test-0001"
    )
    config = config.model_copy(
        update={"policy": spec, "verification": config.verification.model_copy(update={"scope": "all"})}
    )
    agents = AgentSet(
        policy=resolve("policy", spec, in_process=True),
        user=resolve("user", "scripted"),
        critic=resolve("critic", "oracle"),
    )
    job = next(iter(plan_trials(config)))
    expected = ExpectedStates()
    record = run_job(job, config, agents, expected)
    branches = branch_trial(record, config, agents, job, expected).branches
    played = [branch for branch in branches if branch.played]
    assert played and all(not branch.point.flagged for branch in played)
    assert all(branch.end_reason == "agent_error" and branch.effect != "unscored" for branch in played)


def test_a_run_without_a_critic_has_nothing_to_branch() -> None:
    config, agents = build_config(policy="oracle", domains="retail", trials=1)
    with pytest.raises(ValueError, match="need a critic run"):
        branch_run(config, agents, [])


def test_net_saved_per_100_verdicts_and_its_task_interval() -> None:
    def trial(task: str, effects: list[tuple[bool, str]]) -> TrialBranches:
        branches = [
            Branch(
                point=BranchPoint(step=i, round=0, flagged=flagged, label="valid"),
                played=True,
                passed=False,
                reward=0.0,
                end_reason="user_stop",
                steps=[],
                effect=effect,  # type: ignore[arg-type]
            )
            for i, (flagged, effect) in enumerate(effects)
        ]
        return TrialBranches(domain="d", task_id=task, trial_index=0, seed=0, passed=True, branches=branches)

    trials = [
        trial("a", [(True, "cost"), (True, "unchanged"), (False, "saved"), (False, "unscored")]),
        trial("b", [(True, "cost"), (True, "saved"), (False, "unchanged"), (False, "unchanged")]),
    ]
    summary = summarize_branches(trials, resamples=1000, seed=3)
    assert (summary.flags.cost, summary.flags.saved, summary.passes.unscored) == (2, 1, 1)
    assert summary.net_flags.point == pytest.approx(-25.0)  # (1 - 2) / 4 flags
    assert summary.net_passes.point == pytest.approx(100 / 3)  # unscored branches are left out
    assert summary.net_all.point == pytest.approx(0.0)
    assert summary.net_flags.low is not None and summary.net_flags.high is not None
    assert summary.net_flags.low <= -25.0 <= summary.net_flags.high
    assert summarize_branches(trials, resamples=1000, seed=3) == summary  # the seed fixes the resamples


def test_the_command_prints_what_each_verdict_did(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    evaluate(
        policy=POLICY,
        critic="rules",
        domains="retail",
        tasks="retail-test-0001,retail-test-0002",
        trials=2,
        db=db,
    )
    out = tmp_path / "branches.json"
    result = invoke("counterfactuals", "latest", "--db", db, "--output", str(out))
    assert result.exit_code == 0, result.output
    assert "flags of valid actions (false flags)" in result.output
    assert "net trials saved per 100 verdicts:" in result.output
    assert '"net_all"' in out.read_text()
    again = invoke("counterfactuals", "latest", "--db", db)  # read back from the store
    assert again.output.split("net trials")[0] == result.output.split("net trials")[0]
    both = invoke(
        "eval", "-d", "telecom", "--tasks", "telecom-test-0001", "--trials", "1", "--policy", POLICY,
        "--critic", "oracle", "--db", db, "--counterfactuals",
    )  # fmt: skip
    assert both.exit_code == 0, both.output
    assert (
        "what critic oracle's verdicts did" in both.output
        and "net trials saved per 100 flags:" in both.output
    )
    evaluate(policy="oracle", domains="retail", tasks="retail-test-0001", trials=1, db=db)
    plain = ResultsStore(db).run("latest").id
    refused = invoke("counterfactuals", plain, "--db", db)
    assert refused.exit_code == 2 and "error:" in refused.output and "critic" in refused.output


def test_branches_are_played_under_the_runs_own_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A branch is bounded and timed as its trial was, whatever `castbench counterfactuals` is
    given later: a critic reading its limits finds its trial's (issue 56, route 9)."""
    from castbench._trial.deadline import TimeLimits
    from castbench.agents import confine
    from castbench_analyses.counterfactual_report import _run_bounds, run_time_limits

    db = sqlite_url(tmp_path / "runs.db")
    monkeypatch.setenv(confine.LIMITS_ENV, "memory=2G,processes=64")
    evaluate(
        policy=POLICY,
        critic="rules",
        domains="retail",
        tasks="retail-test-0001",
        trials=1,
        db=db,
        time_limits=TimeLimits(step_s=77, trial_s=700),
    )
    monkeypatch.setenv(confine.LIMITS_ENV, "memory=8G")
    store = ResultsStore(db)
    run = store.run("latest").id
    assert run_time_limits(store, run) == TimeLimits(step_s=77, trial_s=700)
    with _run_bounds(json.loads(store.run(run).meta_json)):
        assert confine.limits_from_env() == confine.TrialLimits(memory=2 << 30, processes=64)
    assert confine.limits_from_env() == confine.TrialLimits(memory=8 << 30)

    # A board's counterfactual column plays the exported run's branches the same way.
    from castbench._records.store.export import export_run
    from castbench._results.publish.board import BoardSpec
    from castbench_analyses import counterfactual_report as counterfactual
    from castbench_boards import rows

    seen: list[tuple[object, object]] = []

    def recording(config, agents, records, time_limits=None):  # type: ignore[no-untyped-def]
        seen.append((time_limits, confine.limits_from_env()))
        return []

    monkeypatch.setattr(counterfactual, "branch_run", recording)
    spec = BoardSpec.model_validate(
        {"name": "b", "title": "b", "domains": {"retail": 1}, "metrics": ["pass^1"], "counterfactuals": True}
    )
    rows._net_saved(spec, export_run(store, run))
    assert seen == [(TimeLimits(step_s=77, trial_s=700), confine.TrialLimits(memory=2 << 30, processes=64))]
