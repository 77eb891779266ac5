"""One options model (`castbench._run.options.EvalOptions`) behind every way in: `castbench eval` (and
`profile`), `castbench.evaluate`, `castbench mcp serve` and the `Environment` take their defaults
from it, check values through it (a bad one named as the caller gave it), and the same options
give the same run however they are passed."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

import castbench
from castbench._cli.eval_cmd import eval_command
from castbench._cli.eval_flags import options_of
from castbench._records.config import Limits, Verification
from castbench._run.api import build_config
from castbench._run.environment import Environment
from castbench._run.options import DEFAULTS, EvalFields, EvalOptions, OptionsError
from castbench_analyses.profile_cmd import profile_command
from castbench_bridges import mcp_cmd
from tests.support import invoke, sqlite_url

TASK = "retail-test-0001"


def _flag_defaults(command: Any) -> dict[str, Any]:
    """A built command's parameters' defaults (`eval`, `profile`: their flags are built)."""
    return {param.name: param.default for param in command.params}


def _defaults(command: Any) -> dict[str, Any]:
    return {
        name: param.default
        for name, param in inspect.signature(command).parameters.items()
        if param.default is not inspect.Parameter.empty
    }


def test_the_command_lines_defaults_are_the_models() -> None:
    """`castbench eval` left at its defaults asks for exactly `EvalOptions()`; `profile` differs
    only where it perturbs by default; `mcp serve`'s agents and seed are the model's."""
    assert options_of(_flag_defaults(eval_command)) == DEFAULTS
    profile = _flag_defaults(profile_command)
    perturbing = {"tool_faults": 0.2, "user_perturb": "all", "env_perturb": "all"}
    assert options_of({**profile, **dict.fromkeys(perturbing)}).replace(
        perturbations=DEFAULTS.perturbations
    ) == DEFAULTS.replace(paired=False)
    assert {name: profile[name] for name in perturbing} == perturbing
    served = _defaults(mcp_cmd.serve)
    assert (served["seed"], served["critic"], served["user"]) == (
        DEFAULTS.selection.seed,
        DEFAULTS.agents.critic,
        DEFAULTS.agents.user,
    )


def test_eval_help_shows_the_models_defaults() -> None:
    shown = invoke("eval", "--help", env={"COLUMNS": "250"}).output
    shown_defaults = (("--trials", DEFAULTS.selection.trials), ("--rounds", DEFAULTS.verification.rounds))
    for flag, default in shown_defaults:
        line = next(line for line in shown.splitlines() if flag in line)
        assert f"[default: {default}]" in line, line


def test_the_api_and_the_environment_start_from_the_same_defaults() -> None:
    config, agents = build_config(domains="retail", tasks=[TASK])
    assert (config.trials, config.seed, config.split) == (8, 0, "test")
    assert config.verification == DEFAULTS.verification and config.limits == Limits()
    assert (config.policy, config.critic, config.user) == ("scripted:noisy", "none", "scripted")
    env = Environment()
    assert env.options == DEFAULTS and env.agents.user == agents.user and env.agents.critic is None
    assert Environment(critic=None).options == DEFAULTS  # how it was always called for no critic


def test_the_keywords_are_the_models_fields() -> None:
    """`EvalFields` (the typed keywords of `castbench.evaluate`) names every field, no other."""
    assert set(EvalFields.__annotations__) == set(DEFAULTS.flat())
    assert EvalOptions.of(**DEFAULTS.flat()) == DEFAULTS


def test_an_options_object_equals_its_keywords(tmp_path: Path) -> None:
    keywords: dict[str, Any] = dict(
        domains="retail",
        tasks=[TASK],
        trials=1,
        policy="oracle",
        seed=5,
        verification=Verification(rounds=2),
        db=sqlite_url(tmp_path / "runs.db"),
    )
    options = EvalOptions.of(**keywords)
    assert options.selection.trials == 1 and options.execution.db == keywords["db"]
    assert build_config(options)[0].config_hash() == build_config(**keywords)[0].config_hash()
    first = castbench.evaluate(options).outcome
    again = castbench.evaluate(**keywords).outcome
    assert first.ran == 1 and again.run_id == first.run_id and again.resumed and again.ran == 0
    changed = castbench.evaluate(options, seed=6).outcome  # keywords change an options object
    assert changed.run_id != first.run_id and changed.ran == 1


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"trials": 0}, "trials 0: Input should be greater than or equal to 1"),
        ({"trials": 5000}, "trials: 5000 trials per task is more than the cap of 1000"),
        ({"grading": "exact"}, "grading 'exact': must be one of castbench, tau"),
        ({"tasks": []}, "tasks: no task id given"),
        ({"traits": "calm=high"}, "traits: unknown trait 'calm'"),
        ({"verification": {"rounds": 0}}, "verification.rounds 0: Input should be greater than or equal"),
        ({"trails": 3}, "trails 3: not an option of castbench.evaluate"),
    ],
)
def test_a_bad_option_is_named_as_the_caller_gave_it(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(OptionsError) as raised:
        EvalOptions.of(**fields)
    assert str(raised.value).startswith(said) and "\n" not in str(raised.value)
    with pytest.raises(ValueError, match=said.split(":")[0]):  # every way in says it the same (mcp
        Environment(**fields)  # serve too: tests/core/agents/test_agent_strings.py)


def test_the_trait_sweep_is_the_librarys(tmp_path: Path) -> None:
    """`castbench.evaluate(sweep_traits=...)` runs each profile and reports its drop, as
    `eval --sweep-traits` shows it."""
    db = sqlite_url(tmp_path / "runs.db")
    result = castbench.evaluate(
        domains="retail", tasks=[TASK], trials=1, sweep_traits="impatience=high; confusion=high", db=db
    )
    sweep = result.summary.trait_sweep
    assert sweep is not None and set(sweep.profiles) == {"impatience=high", "confusion=high"}
    assert sweep.baseline_run_id == result.outcome.run_id  # no traits: the run itself is the baseline
    shown = invoke(
        "eval",
        "-d",
        "retail",
        "--tasks",
        TASK,
        "--trials",
        "1",
        "--db",
        db,
        "--sweep-traits",
        "impatience=high;confusion=high",
        env={"COLUMNS": "200"},
    )
    assert "trait sweep" in shown.output and "0 trials run" in shown.output, shown.output


@pytest.mark.extra("tau2")
def test_the_environment_keeps_a_packs_own_limits_as_eval_does() -> None:
    """τ²'s packs run under τ²'s limits unless the options set some: in `eval` and, the same
    trial, in the `Environment` (and so `mcp serve`)."""
    from castbench.domain import load_domain

    pack = load_domain("tau2-retail")
    task = pack.tasks(DEFAULTS.selection.split)[0].id
    config, _ = build_config(domains="tau2-retail", tasks=[task])
    env = Environment()
    env.reset("tau2-retail", task)
    assert env.episode is not None and env.episode.limits == config.limits != Limits()
    env.reset("retail", TASK)
    assert env.episode.limits == Limits()
    chosen = Environment(limits=Limits(max_steps=5))
    chosen.reset("tau2-retail", task)
    assert chosen.episode is not None and chosen.episode.limits == Limits(max_steps=5)
