"""The Ray executor: a run's trials as Ray tasks on a cluster.

The driver (the `castbench eval` process) owns the run and the store: it plans the trials, ships
each as a small key (domain, task id, trial index, seed) with the run's `TrialWork` (put in the
object store once), and commits every record that comes back, once. A worker rebuilds the domain
from its installed pack (cached per worker process), builds the trial's agents from their specs
and runs the trial exactly as the local executor would; model clients live in the worker.

A trial whose worker or node dies is a Ray *system* failure: Ray runs the task again elsewhere
(`max_retries`), and the driver still receives one record per trial. A trial still lost after
those retries comes back as an `infra_error` record (unscored: the run ends incomplete and a
re-run resumes it). `--concurrency` keeps its meaning, trials in flight: each task asks for
`cluster CPUs / concurrency` CPUs (at most 1), so a model-bound run keeps many trials per core.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from castbench import lossless
from castbench.domain import Domain, load_domain
from castbench.errors import FatalInfrastructureError
from castbench.runner.deadline import Halt
from castbench.runner.plan import TrialJob
from castbench.runner.records import TrialRecord
from castbench.runner.work import ExpectedStates, TrialWork, failed_record

__all__ = ["RayExecutor", "TrialKey"]


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


def run_remote_trial(work: TrialWork, key: TrialKey) -> str:
    """Runs on a Ray worker: one trial, its record as JSON (pydantic's, not pickle's, so a worker
    with other library versions cannot hand the driver an object it misreads; written losslessly)."""
    domain = _domain(key.domain)
    job = TrialJob(domain, domain.task(key.task_id), key.trial_index, key.seed)
    return lossless.dumps(work.run(job, _EXPECTED, Halt()))


@dataclass(frozen=True)
class RayExecutor:
    address: str | None = None
    """A cluster to join (`ray://...` or `HOST:PORT`); None joins the cluster `RAY_ADDRESS` names
    or starts a local one."""
    max_retries: int = 3
    """How often Ray re-runs a trial whose worker or node died."""

    def _connect(self) -> Any:
        import ray

        if not ray.is_initialized():
            ray.init(address=self.address, log_to_driver=False, include_dashboard=False)
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
        remote = ray.remote(run_remote_trial).options(
            num_cpus=min(1.0, cpus / concurrency),
            max_retries=self.max_retries,
            retry_exceptions=False,
            scheduling_strategy="SPREAD",  # over every node, not packed onto the first
        )
        shared = ray.put(work)
        pending: dict[Any, TrialJob] = {}
        queue = iter(jobs)

        def submit() -> bool:
            job = None if budget_spent() else next(queue, None)
            if job is None:
                return False
            key = TrialKey(job.domain.name, job.task.id, job.trial_index, job.seed)
            pending[remote.remote(shared, key)] = job
            return True

        try:
            while len(pending) < concurrency and submit():
                pass
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    job = pending.pop(ref)
                    yield self._record(ray, ref, job)
                    submit()
        except BaseException:
            halt.set()
            for ref in pending:
                ray.cancel(ref, force=True)
            raise

    def _record(self, ray: Any, ref: Any, job: TrialJob) -> TrialRecord:
        try:
            return lossless.loads(TrialRecord, ray.get(ref))
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, FatalInfrastructureError):
                raise exc.cause from None  # a server that is down ends the run, as it does locally
            return failed_record(job, f"castbench failed in this trial on its Ray worker: {exc}")
        except ray.exceptions.RayError as exc:
            return failed_record(
                job, f"lost on the Ray cluster after {self.max_retries} retries: {exc}", "infra_error"
            )
