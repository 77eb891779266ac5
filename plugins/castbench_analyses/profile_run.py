"""`castbench profile` as a function: a reliability profile of one agent, from the clean and
perturbed evaluations of the same tasks and seeds (docs/profile.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Unpack

from castbench._records.perturbations import Perturbations, profile_conditions
from castbench._records.store import ResultsStore
from castbench._run.api import EvalResult, evaluate
from castbench._run.options import EvalFields, EvalOptions
from castbench_analyses.profile_metrics import ReliabilityProfile, reliability_profile

__all__ = ["ProfileResult", "RunCondition", "profile", "profile_runs"]


RunCondition = Callable[[str, EvalOptions], EvalResult]
"""How `profile` runs one of its conditions (its name, its options): `evaluate` by default; the
command line shows each run as `castbench eval` does."""


class ProfileResult:
    def __init__(self, profile: ReliabilityProfile, results: dict[str, EvalResult]) -> None:
        self.profile = profile
        self.results = results
        """Each condition's evaluation (`clean`, then `faults`, `user`, `env` as asked)."""


def profile_runs(options: EvalOptions) -> dict[str, EvalOptions]:
    """The runs of a reliability profile of `options`: `clean` (no perturbation), then each
    perturbation `options` has alone (`castbench._records.perturbations.profile_conditions`:
    `faults` with its kinds, `user`, `env`, as a board's profile runs them), every run on the same
    tasks, trials and seeds, none paired, swept or topped up."""
    given = options.perturbations
    perturbed = profile_conditions(given.tool_faults, given.fault_kinds, given.user, given.env, given.seed)
    conditions = {"clean": Perturbations(seed=given.seed), **perturbed}
    return {
        name: options.replace(paired=False, sweep_traits=None, add_trials=0, perturbations=perturbations)
        for name, perturbations in conditions.items()
    }


def profile(
    options: EvalOptions | None = None, *, run: RunCondition | None = None, **fields: Unpack[EvalFields]
) -> ProfileResult:
    """A reliability profile of one agent (`castbench_analyses.profile_metrics`): the runs of
    `profile_runs` (each stored and resumed like any run), then consistency, robustness,
    predictability and safety from their stored trials. `run` runs each condition (default:
    `evaluate`)."""
    chosen = EvalOptions.of(options, **fields)
    results = {
        name: run(name, condition) if run is not None else evaluate(condition)
        for name, condition in profile_runs(chosen).items()
    }
    store = ResultsStore(chosen.execution.db)
    runs = {name: result.outcome.run_id for name, result in results.items()}
    perturbed = {
        name: (result.summary.config.perturbations.label(), store.trials(runs[name]))
        for name, result in results.items()
        if name != "clean"
    }
    found = reliability_profile(
        store.trials(runs["clean"]),
        perturbed,
        policy=chosen.agents.policy,
        critic=chosen.agents.critic,
        runs=runs,
    )
    return ProfileResult(found, results)
