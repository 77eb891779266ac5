"""Verify a run: re-execute every stored trial and compare with what it claims.

`castbench verify`, `import` and `leaderboard build` use this, so an export whose rewards were
edited (or whose trajectory no longer follows from its actions) is refused before it reaches a
store or a board. Each trial is graded again with the grading mode recorded with its run (runs
from before grading modes are re-graded the way they were graded), see `runner/replay.py`.
"""

from __future__ import annotations

from pydantic import BaseModel

from castbench.domain import Database, Domain, DomainDataError, Task, load_domain
from castbench.runner.config import RunConfig
from castbench.runner.records import TrialRecord
from castbench.runner.replay import replay_trial

__all__ = ["TrialMismatch", "VerifyReport", "verify_run"]

_SHOWN = 5


class TrialMismatch(BaseModel):
    domain: str
    task_id: str
    trial_index: int
    problems: list[str]

    def describe(self, run_id: str) -> str:
        where = f"run {run_id}: {self.domain} task {self.task_id} trial {self.trial_index}"
        return f"{where}: {'; '.join(self.problems)}"


class VerifyReport(BaseModel):
    run_id: str
    trials: int
    """Trials checked."""
    mismatches: list[TrialMismatch]

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def describe(self) -> str:
        if self.ok:
            return f"run {self.run_id}: all {self.trials} trials re-executed and re-graded as stored"
        lines = [m.describe(self.run_id) for m in self.mismatches[:_SHOWN]]
        more = len(self.mismatches) - _SHOWN
        return (
            f"run {self.run_id}: {len(self.mismatches)} of {self.trials} trials do not verify\n  "
            + "\n  ".join(lines)
            + (f"\n  ... and {more} more" if more > 0 else "")
        )


class _Domains:
    """Installed domains, their tasks and expected states, loaded once per verification."""

    def __init__(self) -> None:
        self._domains: dict[str, Domain | None] = {}
        self._tasks: dict[str, dict[str, Task]] = {}
        self._expected: dict[tuple[str, str], Database] = {}

    def domain(self, name: str) -> Domain | None:
        if name not in self._domains:
            try:
                loaded: Domain | None = load_domain(name)
            except (KeyError, DomainDataError):
                loaded = None
            self._domains[name] = loaded
            self._tasks[name] = {task.id: task for task in loaded.tasks()} if loaded else {}
        return self._domains[name]

    def task(self, domain: str, task_id: str) -> Task | None:
        return self._tasks[domain].get(task_id)

    def expected(self, domain: Domain, task: Task) -> Database:
        key = (domain.name, task.id)
        if key not in self._expected:
            self._expected[key] = domain.replay(task)
        return self._expected[key]


def _problems(record: TrialRecord, config: RunConfig, domains: _Domains) -> list[str]:
    domain = domains.domain(record.domain)
    if domain is None:
        return [f"domain {record.domain} is not installed"]
    task = domains.task(record.domain, record.task_id)
    if task is None:
        return [f"no task {record.task_id} in domain {record.domain} {domain.version}"]
    _, problems = replay_trial(
        domain,
        task,
        record,
        domains.expected(domain, task),
        run_seed=config.seed,
        user=config.user,
        traits=config.traits,
        grading=config.grading_mode,
    )
    return problems


def verify_run(run_id: str, config: RunConfig, trials: list[TrialRecord]) -> VerifyReport:
    """Re-execute and re-grade every trial of a run."""
    domains = _Domains()
    mismatches = [
        TrialMismatch(domain=r.domain, task_id=r.task_id, trial_index=r.trial_index, problems=problems)
        for r in trials
        if (problems := _problems(r, config, domains))
    ]
    return VerifyReport(run_id=run_id, trials=len(trials), mismatches=mismatches)
