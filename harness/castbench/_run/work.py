"""One trial of a run, as every executor runs it: the rollout under the run's limits, retried
from its seed on infrastructure errors, our own failures turned into that trial's record.

`TrialWork` holds only what the run's trials share and is picklable, so an executor on other
machines (Ray) runs each trial exactly as this process would; what is per process (the expected
states, the interrupt flag) is passed in where the trial runs.
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass
from typing import Literal

from castbench._agents.models.settings import ModelSettings
from castbench._base.conversation import Usage
from castbench._base.errors import FatalInfrastructureError
from castbench._domain.database import Database
from castbench._domain.domain import Domain
from castbench._domain.task import Task
from castbench._records.config import RunConfig
from castbench._records.execution import ExecutionPlan
from castbench._records.trial import TrialRecord
from castbench._run.plan import TrialJob
from castbench._trial.deadline import Cancelled, Halt, TimeLimits
from castbench._trial.rollout import AgentSet, run_trial
from castbench._trial.spec import Overrule, TrialRuntime, TrialSpec

__all__ = ["ExpectedStates", "TrialWork", "failed_record", "run_job", "trial_spec"]


class ExpectedStates:
    """Expected state per task, replayed once and shared read-only by every trial."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], Database] = {}
        self._lock = threading.Lock()

    def get(self, domain: Domain, task: Task) -> Database:
        key = (domain.name, task.id)
        with self._lock:
            if key not in self._cache:
                self._cache[key] = domain.replay(task)
            return self._cache[key]


def failed_record(
    job: TrialJob, message: str, end_reason: Literal["harness_error", "infra_error"] = "harness_error"
) -> TrialRecord:
    """The record of a trial that did not run to its end for a reason that is not the agent's
    (our own code, or infrastructure): stored with its reason, never scored."""
    return TrialRecord(
        domain=job.domain.name,
        domain_version=job.domain.version,
        task_id=job.task.id,
        trial_index=job.trial_index,
        seed=job.seed,
        status="error",
        reward=None,
        end_reason=end_reason,
        opening="",
        error=message,
    )


def trial_spec(
    job: TrialJob, config: RunConfig, agents: AgentSet, expected: ExpectedStates, *, labelled: bool = True
) -> TrialSpec:
    """The trial `job` of the run `config` describes: its limits, verification, traits, grading,
    perturbations and reply judge are the run's."""
    return TrialSpec(
        job.domain,
        job.task,
        job.trial_index,
        job.seed,
        agents,
        expected.get(job.domain, job.task),
        config.limits,
        config.verification,
        config.traits,
        grading=config.grading_mode,
        perturbations=config.perturbations if config.perturbations.active else None,
        labelled=labelled,
        reply_judge=ModelSettings.model_validate(config.reply_judge) if config.reply_judge else None,
    )


def run_job(
    job: TrialJob,
    config: RunConfig,
    agents: AgentSet,
    expected: ExpectedStates,
    time_limits: TimeLimits | None = None,
    stop: Halt | None = None,
    plan: ExecutionPlan | None = None,
    *,
    labelled: bool = True,
    overrule: Overrule | None = None,
) -> TrialRecord:
    """One trial of the grid, once, under the run's limits, verification and traits (`trial_spec`),
    executed as its `plan` says (`labelled` and `overrule`: as `TrialSpec` and `TrialRuntime`
    take them)."""
    runtime = TrialRuntime(plan, time_limits or TimeLimits(), stop, overrule)
    return run_trial(trial_spec(job, config, agents, expected, labelled=labelled), runtime)


@dataclass(frozen=True)
class TrialWork:
    """Everything a run's trials share: its config, its agents (specs: each trial builds its
    own), its execution plan, the agents' time limits and how often an infrastructure error
    restarts a trial."""

    config: RunConfig
    agents: AgentSet
    plan: ExecutionPlan
    time_limits: TimeLimits
    max_attempts: int = 3

    def run(self, job: TrialJob, expected: ExpectedStates, stop: Halt) -> TrialRecord:
        """Infrastructure errors restart the trial from scratch with the same seed. The record's
        usage counts every attempt: it is what the trial cost. A bug of ours in one trial is that
        trial's `harness_error`, never the run's end. A fatal error ends the run, carrying this
        trial's unscored record (`FatalInfrastructureError.stopped`) for the engine to store."""
        record = None
        spent: dict[str, Usage] = {}
        retried_for: list[str] = []
        for attempt in range(1, self.max_attempts + 1):
            try:
                record = run_job(job, self.config, self.agents, expected, self.time_limits, stop, self.plan)
            except FatalInfrastructureError as exc:
                stopped = failed_record(job, f"the run stopped in this trial: {exc}", "infra_error")
                exc.stopped = stopped.model_copy(
                    update={"attempts": attempt, "usage": dict(spent), "retried_for": list(retried_for)}
                )
                raise
            except Cancelled:
                raise
            except Exception as exc:
                return failed_record(
                    job, f"castbench failed in this trial: {exc!r}\n{traceback.format_exc()}"
                )
            for role, usage in record.usage.items():
                spent[role] = spent.get(role, Usage()) + usage
            record = record.model_copy(
                update={"attempts": attempt, "usage": dict(spent), "retried_for": list(retried_for)}
            )
            if record.end_reason != "infra_error":
                break
            retried_for.append(record.error or "infrastructure error")
        assert record is not None
        return record
