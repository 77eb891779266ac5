"""Parity with τ²'s own code: the same trajectory graded by τ²'s evaluator and by castbench.

castbench's side runs the trajectory as a trial (`castbench_authoring.parity.castbench_trial`, graded
the `tau` way). τ²'s side (`Tau2Reference`) takes that trial's messages (`castbench_tau2.messages`)
as a τ² `SimulationRun` and grades it with `tau2.evaluator.evaluator.evaluate_simulation`
(`EvaluationType.ALL`, as τ²'s runner does without a judge): τ² rebuilds its own environment,
replays the trajectory's calls through it (checking that every tool answer it gets is the one
castbench recorded, and raising otherwise), replays the gold on another, compares their database
hashes and checks the required outputs.
"""

from __future__ import annotations

from typing import Any

from castbench.domain import TrialRecord
from castbench_tau2.domain import Tau2Domain
from castbench_tau2.messages import TERMINATION, trial_messages
from castbench_tau2.source import import_tau2

__all__ = ["Tau2Reference", "simulation_run"]


def simulation_run(domain: Tau2Domain, record: TrialRecord, run_id: str = "") -> Any:
    """The trial as τ²'s `SimulationRun` (its reward info left for τ²'s evaluator)."""
    simulation = import_tau2("tau2.data_model.simulation")
    return simulation.SimulationRun(
        id=run_id or f"{record.task_id}#{record.trial_index}",
        task_id=domain.raw_task(record.task_id).id,
        start_time="",
        end_time="",
        duration=record.duration_s,
        termination_reason=TERMINATION.get(record.end_reason, "user_error"),
        messages=trial_messages(record),
        trial=record.trial_index,
        seed=record.seed,
    )


class Tau2Reference:
    """τ²'s evaluator for one domain."""

    def __init__(self, domain: Tau2Domain) -> None:
        self._domain, self._name = domain, domain.name.removeprefix("tau2-")
        evaluator = import_tau2("tau2.evaluator.evaluator")
        self._evaluate, self._all = evaluator.evaluate_simulation, evaluator.EvaluationType.ALL
        self._constructor = import_tau2("tau2.registry").registry.get_env_constructor(self._name)

    def reward_info(self, record: TrialRecord) -> Any:
        task = self._domain.raw_task(record.task_id)
        return self._evaluate(
            simulation_run(self._domain, record),
            task,
            self._all,
            solo_mode=False,
            domain=self._name,
        )

    def reward(self, record: TrialRecord) -> float:
        return float(self.reward_info(record).reward)

    def own_trial(self, record: TrialRecord) -> float:
        """What τ²'s own harness does per trial, without a model: a fresh environment (its
        orchestrator builds one per simulation), every tool call of the trial through
        `Environment.get_response`, then `evaluate_simulation`; returns τ²'s reward."""
        environment = self._constructor()
        run = simulation_run(self._domain, record)
        for message in run.messages:
            for call in getattr(message, "tool_calls", None) or []:
                environment.get_response(call)
        return float(
            self._evaluate(
                run, self._domain.raw_task(record.task_id), self._all, solo_mode=False, domain=self._name
            ).reward
        )
