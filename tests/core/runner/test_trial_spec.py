"""The trial spec (`castbench._trial.spec`): one frozen value for what a trial is, the runtime
handles that play it apart; `Episode` and `run_trial` take the two, and `run_trial`'s form of
castbench 0.1.0 still plays the same trial, warning, until 0.2.0. No function of the runner (or of
the attribution it feeds) is over cyclomatic complexity 20."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import castbench.domain
from castbench._agents.registry import resolve
from castbench._base.deprecation import CastbenchDeprecationWarning
from castbench._records.config import Limits, Verification
from castbench._records.perturbations import Perturbations
from castbench._records.trial import TrialRecord
from castbench._trial.deadline import TimeLimits
from castbench._trial.episode import Episode
from castbench._trial.execution import AgentSet
from castbench._trial.rollout import run_trial
from castbench._trial.spec import TrialRuntime, TrialSpec
from castbench.domain import Domain
from tests.support import without_durations

ROOT = Path(__file__).resolve().parents[3]
OLD_FORM = (
    r"run_trial\(domain, task, trial_index, seed, agents, expected, \.\.\.\) is deprecated and will be "
    r"removed in castbench 0\.2\.0: call run_trial\(TrialSpec\("
)


def _agents(critic: str | None = "rules") -> AgentSet:
    return AgentSet(
        resolve("policy", "scripted:noisy"),
        resolve("user", "scripted"),
        None if critic is None else resolve("critic", critic),
    )


def _same(one: TrialRecord, other: TrialRecord) -> bool:
    return without_durations(one.model_dump(mode="json")) == without_durations(other.model_dump(mode="json"))


def test_a_spec_is_frozen_and_defaults_to_an_ordinary_trial(retail: Domain) -> None:
    task = retail.task("retail-test-0001")
    spec = TrialSpec(retail, task, 0, 7, _agents(None), retail.replay(task))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.seed = 8  # type: ignore[misc]
    assert (spec.limits, spec.verification, spec.grading) == (Limits(), Verification(), "castbench")
    assert spec.traits is None and spec.perturbations is None and spec.reply_judge is None and spec.labelled
    runtime = TrialRuntime()
    assert runtime.time_limits == TimeLimits() and runtime.plan is None and runtime.stop is None
    assert (runtime.overrule, runtime.judge, runtime.labeler, runtime.stored_actions) == (
        None,
        None,
        None,
        False,
    )
    assert dataclasses.replace(spec, seed=8).seed == 8 and spec.seed == 7


def test_episode_and_run_trial_take_the_spec_and_its_runtime() -> None:
    assert list(inspect.signature(Episode).parameters) == ["spec", "runtime"]
    assert castbench.domain.TrialSpec is TrialSpec and castbench.domain.TrialRuntime is TrialRuntime
    assert castbench.domain.TimeLimits is TimeLimits


def test_the_old_form_warns_and_plays_the_same_trial_as_the_spec(retail: Domain) -> None:
    """Every setting of the 0.1.0 form reaches the trial as the spec's field it became: a critic
    loop that blocks, τ grading, traits, tool faults, no labels, a step limit."""
    task = retail.task("retail-test-0003")
    agents, expected = _agents(), retail.replay(task)
    limits, verification = Limits(max_steps=25), Verification(rounds=2, on_exhausted="block")
    faults = Perturbations(tool_faults=0.3, user=["typos"])
    time_limits = TimeLimits(step_s=120.0, trial_s=None)
    traits = {"impatience": "high"}
    spec = TrialSpec(retail, task, 1, 11, agents, expected, limits, verification, traits, "tau", faults)
    spec = dataclasses.replace(spec, labelled=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new form warns of nothing
        new = run_trial(spec, TrialRuntime(time_limits=time_limits))
    with pytest.warns(CastbenchDeprecationWarning, match=OLD_FORM) as caught:
        old = run_trial(
            retail, task, 1, 11, agents, expected, limits, verification, traits, time_limits, None, "tau",
            faults, labelled=False,
        )  # fmt: skip
    assert caught[0].filename == __file__  # it points at the caller
    assert _same(old, new)
    assert new.status == "scored" and new.steps
    proposals = [proposal for step in new.steps for proposal in step.proposals]
    assert all(proposal.label is None for proposal in proposals)  # `labelled=False` reached it
    assert any(proposal.verdict is not None for proposal in proposals)  # so did the critic
    assert new.grade is not None and new.grade.strict_reward is None


def test_the_old_form_by_keyword_and_the_spec_by_keyword(retail: Domain) -> None:
    task = retail.task("retail-test-0002")
    agents, expected = _agents(None), retail.replay(task)
    spec = TrialSpec(retail, task, 0, 3, agents, expected)
    with pytest.warns(CastbenchDeprecationWarning, match=OLD_FORM):
        old = run_trial(domain=retail, task=task, trial_index=0, seed=3, agents=agents, expected=expected)
    assert _same(old, run_trial(spec=spec))
    assert _same(old, run_trial(spec, None))


def test_a_spec_that_is_not_one_is_refused(retail: Domain) -> None:
    with pytest.raises(TypeError, match="run_trial's spec must be a TrialSpec, not str"):
        run_trial(spec="retail")  # type: ignore[call-overload]
    with pytest.raises(TypeError):  # the old form, its arguments missing: Python's own message
        run_trial(retail)  # type: ignore[call-overload]


def test_a_spec_without_a_policy_is_for_a_driver_not_run_trial(retail: Domain) -> None:
    task = retail.task("retail-test-0001")
    spec = TrialSpec(retail, task, 0, 1, AgentSet(None, resolve("user", "scripted")), retail.replay(task))
    with pytest.raises(ValueError, match="run_trial needs a policy"):
        run_trial(spec)
    episode = Episode(spec)  # a driver steps it with actions from outside
    try:
        assert episode.reset() is not None and episode.policy is None
    finally:
        episode.close()


def test_no_function_of_the_runner_or_the_attribution_is_over_complexity_20() -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "ruff", "check", "--select", "C901", "--config",
            "lint.mccabe.max-complexity=20", "--output-format", "concise",
            "harness/castbench/runner", "harness/castbench/attribution",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
