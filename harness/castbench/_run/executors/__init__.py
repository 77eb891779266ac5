"""Executors: where a run's trials run. The engine owns the run and the store and commits each
record as it comes back; an executor only turns the trial plan into finished records, running
each as the run's execution plan says (`castbench._trial.execution`, which the executor's `name`
is one input of).

- `local` (default): threads in this process (`--concurrency` trials at once).
- `ray`: tasks on a Ray cluster (`--executor ray [--ray-address ADDR]`), each trial rebuilt and
  run on a worker, its record sent back; a trial lost with its node is run again elsewhere. It is
  a satellite package (`castbench_ray`, the `ray` extra), found through the `castbench.executors`
  entry point: the core names no satellite.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from importlib.metadata import entry_points
from importlib.util import find_spec
from typing import Protocol

from castbench._records.execution import ExecutorName
from castbench._records.trial import TrialRecord
from castbench._run.plan import TrialJob
from castbench._run.work import TrialWork
from castbench._trial.deadline import Halt

__all__ = ["EXECUTORS", "Executor", "make_executor"]

EXECUTORS = ("local", "ray")

PLUGIN_GROUP = "castbench.executors"
"""The entry points of the executors outside the core (`ray = "castbench_ray:RayExecutor [ray]"`):
each names a class built with the run's `ray_address` (`address=`)."""


class Executor(Protocol):
    @property
    def name(self) -> ExecutorName:
        """Which executor this is, as the execution plan records it."""
        ...

    def results(
        self,
        jobs: Iterable[TrialJob],
        work: TrialWork,
        concurrency: int,
        budget_spent: Callable[[], bool],
        halt: Halt,
    ) -> Generator[TrialRecord, None, None]:
        """Finished trials as they come, at most `concurrency` running; once `budget_spent()` is
        true no new trial starts. On any exception (Ctrl-C among them) `halt` is set and running
        trials are abandoned, not yielded."""
        ...


def make_executor(name: str = "local", ray_address: str | None = None) -> Executor:
    """The executor `--executor NAME` names (`ray` imports Ray only here)."""
    if name == "local":
        from castbench._run.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        if find_spec("ray") is None:
            raise ValueError("--executor ray needs Ray: pip install 'castbench[ray]'")
        return _installed(name)(address=ray_address)
    raise ValueError(f"--executor: unknown executor '{name}' (choose from {', '.join(EXECUTORS)})")


def _installed(name: str) -> Callable[..., Executor]:
    """The executor class the installed `castbench.executors` entry point `name` gives."""
    for point in entry_points(group=PLUGIN_GROUP, name=name):
        made: Callable[..., Executor] = point.load()
        return made
    raise ValueError(
        f"--executor {name}: castbench's {name} executor is not installed: pip install 'castbench[{name}]'"
    )
