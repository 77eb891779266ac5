"""The Ray executor: a run's trials as Ray tasks on a cluster.

The driver (the `castbench eval` process) owns the run and the store: it plans the trials, ships
them as small keys (domain, task id, trial index, seed) with the run's `TrialWork` (put in the
object store once), and commits every record that comes back, once. A worker rebuilds the domain
from its installed pack (cached per worker process), builds the trial's agents from their specs
and runs the trial exactly as the local executor would; model clients live in the worker.

Trials travel in batches, one Ray task each: a task per trial cost Ray's scheduling, its object
transfers and a driver round trip every trial (6 trials/s on two nodes against 28 locally). A
batch runs on its worker with the local executor, `inner` trials at once, so `--concurrency`
keeps its meaning, trials in flight: `concurrency / inner` tasks run at once, each asking for its
share of the cluster's CPUs (at most 1), and each batch holds `inner` x `ROUNDS` trials.

A batch whose worker or node dies is a Ray *system* failure: Ray runs the task again elsewhere
(`max_retries`), and the driver still receives one record per trial. A batch still lost after
those retries comes back as `infra_error` records (unscored: the run ends incomplete and a re-run
resumes it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

from castbench._base import lossless
from castbench._base.errors import FatalInfrastructureError
from castbench._records.execution import ExecutorName
from castbench._records.provenance import require_recorded_sandbox
from castbench._records.trial import TrialRecord
from castbench._run.executors.local import LocalExecutor
from castbench._run.plan import TrialJob
from castbench._run.work import ExpectedStates, TrialWork, failed_record
from castbench._trial.deadline import Halt
from castbench.domain import Domain, load_domain

__all__ = ["RayExecutor", "TrialKey"]

ROUNDS = 4
"""Trials per slot of a batch, one after another: enough to spread Ray's cost per task over
several trials, few enough that the run's last batches end together and a lost one costs little."""


@dataclass(frozen=True)
class TrialKey:
    """A trial as it travels: everything else is rebuilt on the worker."""

    domain: str
    task_id: str
    trial_index: int
    seed: int


@cache
def _domain(name: str) -> Domain:
    return load_domain(name)


_EXPECTED = ExpectedStates()
"""Per worker process, like the domains: a task's expected state is replayed once per worker."""


def run_remote_trials(work: TrialWork, keys: list[TrialKey], inner: int) -> list[str]:
    """Runs on a Ray worker: a batch of trials, `inner` at once, their records as JSON
    (pydantic's, not pickle's, so a worker with other library versions cannot hand the driver an
    object it misreads; written losslessly), in the order they finished. A node whose workers
    cannot get the sandbox the run recorded refuses the batch (`require_recorded_sandbox`)."""
    require_recorded_sandbox(work.config)
    jobs = []
    for key in keys:
        domain = _domain(key.domain)
        wanted = work.config.domains.get(key.domain)
        if wanted is not None and domain.version != wanted:
            raise FatalInfrastructureError(
                f"a Ray worker has domain {key.domain} {domain.version}, but the run is on {wanted}: "
                "install the same pack (and data) on every node; castbench's CASTBENCH_* variables "
                "travel with a cluster castbench joins itself, not with one the caller connected to"
            )
        jobs.append(TrialJob(domain, domain.task(key.task_id), key.trial_index, key.seed))
    records = LocalExecutor(_EXPECTED).results(jobs, work, inner, lambda: False, Halt())
    return [lossless.dumps(record) for record in records]


def _castbench_environment() -> dict[str, str]:
    """castbench's settings in the driver's environment (`CASTBENCH_TAU2_DATA` among them): the
    workers load their domains by them, so they travel with the job to every node."""
    return {name: value for name, value in os.environ.items() if name.startswith("CASTBENCH_")}


def _job_key(domain: str, task_id: str, trial_index: int) -> tuple[str, str, int]:
    return (domain, task_id, trial_index)


@dataclass(frozen=True)
class RayExecutor:
    address: str | None = None
    """A cluster to join (`ray://...` or `HOST:PORT`); None joins the cluster `RAY_ADDRESS` names
    or starts a local one."""
    max_retries: int = 3
    """How often Ray re-runs a trial whose worker or node died."""
    name: ClassVar[ExecutorName] = "ray"

    def _connect(self) -> Any:
        import ray

        if not ray.is_initialized():
            ray.init(
                address=self.address,
                log_to_driver=False,
                include_dashboard=False,
                runtime_env={"env_vars": _castbench_environment()},
            )
        return ray

    def results(
        self,
        jobs: Iterable[TrialJob],
        work: TrialWork,
        concurrency: int,
        budget_spent: Callable[[], bool],
        halt: Halt,
    ) -> Generator[TrialRecord, None, None]:
        ray = self._connect()
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        concurrency = max(1, concurrency)
        slots = max(1, min(concurrency, int(cpus)))  # tasks at once: about one per CPU
        inner = -(-concurrency // slots)  # trials at once within a task
        tasks = -(-concurrency // inner)
        remote = ray.remote(run_remote_trials).options(
            num_cpus=min(1.0, cpus / tasks),
            max_retries=self.max_retries,
            retry_exceptions=False,
            scheduling_strategy="SPREAD",  # over every node, not packed onto the first
        )
        shared = ray.put(work)
        pending: dict[Any, list[TrialJob]] = {}
        queue = iter(jobs)

        def submit() -> bool:
            batch: list[TrialJob] = []
            while len(batch) < inner * ROUNDS and not budget_spent():
                job = next(queue, None)
                if job is None:
                    break
                batch.append(job)
            if not batch:
                return False
            keys = [TrialKey(job.domain.name, job.task.id, job.trial_index, job.seed) for job in batch]
            pending[remote.remote(shared, keys, inner)] = batch
            return True

        try:
            while len(pending) < tasks and submit():
                pass
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    batch = pending.pop(ref)
                    submit()  # refill first: the caller commits each record before the next
                    yield from self._records(ray, ref, batch)
        except BaseException:
            halt.set()
            for ref in pending:
                ray.cancel(ref, force=True)
            raise

    def _records(self, ray: Any, ref: Any, batch: list[TrialJob]) -> list[TrialRecord]:
        try:
            records = [lossless.loads(TrialRecord, text) for text in ray.get(ref)]
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, FatalInfrastructureError):
                raise exc.cause from None  # a server that is down ends the run, as it does locally
            message = f"castbench failed in this trial's batch on its Ray worker: {exc}"
            return [failed_record(job, message) for job in batch]
        except ray.exceptions.RayError as exc:
            message = f"lost on the Ray cluster after {self.max_retries} retries: {exc}"
            return [failed_record(job, message, "infra_error") for job in batch]
        by_key = {_job_key(r.domain, r.task_id, r.trial_index): r for r in records}
        return [by_key[_job_key(job.domain.name, job.task.id, job.trial_index)] for job in batch]
