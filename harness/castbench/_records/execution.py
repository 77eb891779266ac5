"""How a run executes: where its trials run and, per role, how a call into its agent runs.

Worked out once per run from its agents and options (`castbench._trial.execution.plan_execution`),
then read by everything that used to decide for itself: the executor (a thread per trial,
greenlets on the model loop, Ray), the shared store's leases, the episode (how each agent call
runs) and the transports (in process, a worker, an agent service that drives the episode).

It is recorded in the run's meta (`execution`), not in its config: how trials were scheduled does
not change what they are, so a run resumed with another `--concurrency` or executor is the same run
and its id does not move. Runs stored before plans were recorded read as "not recorded".
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from castbench._agents.registry import Role
from castbench._agents.transports import AgentCall

__all__ = [
    "IN_PROCESS",
    "ISOLATED",
    "NOT_ISOLATED",
    "ExecutionPlan",
    "ExecutorName",
    "PoolMode",
    "TrialIsolation",
    "TrialMode",
]

ExecutorName = Literal["local", "ray"]

TrialMode = Literal["inline", "threads", "loop", "ray"]
"""Where a process runs trials: a thread per trial in flight (`threads`), greenlets on the model
loop (`loop`), or batches on a Ray cluster (`ray`); `--concurrency 1` is a pool of one. `inline`
(one at a time on the run's own thread) is what runs stored before the pool of one say."""
PoolMode = Literal["threads", "loop"]

TrialIsolation = Literal[
    "process per trial",
    "castbench's own agents",
    "none: the agent runs outside castbench",
    "none: the agent runs in castbench's process",
]
"""What keeps one trial of the agent under test from carrying anything to the next:
- `process per trial`: import-path agents run in a fresh process per trial, forked from a worker
  that never imported them, with a fresh scratch folder; every process a trial started is killed
  with it (`castbench._agents.transports.serve`);
- `castbench's own agents`: only castbench's built-in and model-backed agents, a fresh instance
  per trial, whose code keeps nothing between trials;
- `none: the agent runs outside castbench`: an agent service or A2A agent (it keeps what it likes
  between trials);
- `none: the agent runs in castbench's process`: an import-path agent in castbench's own process
  (`--in-process`, privileged): its module's memory lasts the whole run. (Runs stored before this
  value existed say `none: the agent runs outside castbench` for these.)
"""
ISOLATED: frozenset[str] = frozenset({"process per trial", "castbench's own agents"})
NOT_ISOLATED: Final = "none: the agent runs outside castbench"
IN_PROCESS: Final = "none: the agent runs in castbench's process"

_TRIALS: dict[str, str] = {
    "inline": "one trial at a time on this thread",
    "threads": "a thread per trial",
    "loop": "trials as greenlets on the model loop",
    "ray": "trial batches on a Ray cluster",
}


class ExecutionPlan(BaseModel):
    """One run's execution, decided once (see the module's docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    executor: ExecutorName = "local"
    concurrency: int = 1
    """Trials in flight at once (`--concurrency`)."""
    trials: TrialMode
    pool: PoolMode
    """How one process runs several trials at once: the local executor above one trial, and each
    Ray worker with its batch."""
    why: str
    """Why the trials run where they do (one line)."""
    processes: int = 1
    """Processes of this machine the local executor spreads the trials over, each with its
    share of `concurrency` in flight (`castbench._run.executors.processes`); 1: this process."""
    shared: bool = False
    """The run's trials are split with other processes through leases on a shared store (Postgres)."""
    calls: dict[Role, AgentCall]
    """Role -> how a call into its agent runs; a run without a critic has none."""
    trial_isolation: TrialIsolation | None = None
    """What keeps trials independent (see `TrialIsolation`); None: a run stored before castbench
    recorded it, when import-path agents' workers served trial after trial in one process."""

    @property
    def isolated(self) -> bool:
        return self.isolation() in ISOLATED

    def isolation(self) -> str:
        """The trial isolation as a console or a board says it. A run stored before it was
        recorded whose agents were all castbench's scripted agents or lean-client models (calls
        inline or on the loop) had castbench's own agents; any other is not recorded."""
        if self.trial_isolation is not None:
            return self.trial_isolation
        if all(call.mode in ("inline", "loop") for call in self.calls.values()):
            return "castbench's own agents"
        return "not recorded (stored before castbench isolated trials)"

    def call(self, role: Role) -> AgentCall:
        found = self.calls.get(role)
        if found is None:
            raise KeyError(f"the execution plan has no {role}: the run has no {role} agent")
        return found

    def line(self) -> str:
        """One line for a console: where trials run and how each role's agent is called."""
        at_once = f", {self.concurrency} at once" if self.concurrency > 1 else ", one at a time"
        trials = _TRIALS[self.trials] + (at_once if self.trials != "inline" else "")
        if self.trials == "ray":
            trials += f" (each worker's batch: {_TRIALS[self.pool]})"
        if self.processes > 1:
            trials += f" over {self.processes} processes"
        if self.shared:
            trials += ", split with other processes through leases on the shared store"
        roles = "; ".join(f"{role} {call.mode}" for role, call in self.calls.items())
        return f"execution: {trials} ({self.why}); agent calls: {roles}; trial isolation: {self.isolation()}"
