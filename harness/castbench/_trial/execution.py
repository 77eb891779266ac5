"""The one place a run's execution is decided (`castbench._records.execution.ExecutionPlan`).

From the run's agents and its options (executor, concurrency, a shared store or not):

- per role, how a call into its agent runs. castbench's scripted agents never block: inline, on
  the trial's thread. Import-path agents run in worker processes of their own; an agent service
  calls in and its transport drives the episode. A model on the lean client waits by awaiting
  the model loop when the trial runs there; anything else that may block a thread (code of one's
  own in castbench's process, litellm's synchronous client) runs on the trial's agent thread, so
  the trial can stop waiting for it;
- where trials run: in a pool of `--concurrency` (one trial at a time is a pool of one). When no
  agent can block a thread, as greenlets on the model loop, where hundreds of model-bound trials
  in flight cost one thread (a thread each spent most of the process's CPU switching threads
  under the GIL); otherwise a thread per trial, and so one at a time with no model to await
  (no loop to start: a thread pool of one costs about a third of a loop's per trial). Ray runs
  batches on its workers, each in the same pool. A driver that steps an `Episode` on its own
  thread (a replay, the MCP server, a trainer) is not on the loop: its lean-client calls go to the
  agent thread (`Episode._guarded`);
- in how many processes (`processes`): one interpreter drives about a thousand model calls a
  second at most (about 1 ms of CPU each, under the GIL), so a local run with more than
  `PER_PROCESS` trials in flight on the model loop spreads them over ceil(C / `PER_PROCESS`)
  processes, one per core at most (`castbench._run.executors.processes`; this process stays
  the store's only writer). `--workers N` asks for N (1: this process only), for trials on
  threads too. Agents in worker processes or behind a service keep one process: their own
  processes and connections are the run's (`worker_cap`, the service's transport).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from castbench._agents.models.settings import lean_route
from castbench._agents.registry import AgentSpec, Role
from castbench._agents.transports import AgentCall
from castbench._records.execution import (
    IN_PROCESS,
    NOT_ISOLATED,
    ExecutionPlan,
    ExecutorName,
    PoolMode,
    TrialIsolation,
    TrialMode,
)

__all__ = ["PER_PROCESS", "AgentSet", "plan_execution"]

PER_PROCESS = 64
"""Trials in flight one process keeps when the plan picks the processes: at 64 against a server
answering in 0.5 s a process makes 512 model calls a second, about half a core
(`bench/whole_command_latency.py`, docs/scale.md)."""


@dataclass(frozen=True)
class AgentSet:
    policy: AgentSpec | None
    """`None` when the actions come from outside (an MCP client, a service, a trainer): that
    policy sees the public briefing only."""
    user: AgentSpec
    critic: AgentSpec | None = None

    def roles(self) -> list[tuple[Role, AgentSpec]]:
        """The roles that have an agent (a `--critic none` has none)."""
        found: list[tuple[Role, AgentSpec | None]] = [
            ("policy", self.policy),
            ("user", self.user),
            ("critic", self.critic),
        ]
        return [(role, spec) for role, spec in found if spec is not None and spec.kind != "none"]


def _lean(spec: AgentSpec) -> bool:
    """A model in castbench's process that the lean client reaches: it waits by awaiting."""
    model, api_base = str(spec.params.get("model", "")), spec.params.get("api_base")
    return spec.kind == "model" and spec.transport == "in-process" and lean_route(model, api_base)


def _blocks(spec: AgentSpec) -> str | None:
    """Why a call into `spec`'s agent may block a thread; None when it never does."""
    if spec.kind == "builtin" or _lean(spec):
        return None
    if spec.kind == "service":
        return "an agent service, driven over the network"
    if spec.transport == "worker":
        return "an import-path agent, waited for in a worker process"
    if spec.kind == "import":
        return "code of one's own in castbench's process"
    return "a model on litellm's synchronous client"


def _call(spec: AgentSpec, on_loop: bool) -> AgentCall:
    if spec.kind == "builtin":
        return AgentCall(mode="inline", why="castbench's scripted agent: never blocks")
    if spec.kind == "service":
        return AgentCall(mode="service", why="an agent service: it calls in, its transport drives the trial")
    if spec.transport == "worker":
        return AgentCall(mode="worker", why="an import-path agent: a worker process of its own")
    if _lean(spec) and on_loop:
        return AgentCall(mode="loop", why="a model on the lean client: its waits are awaits on the loop")
    reason = "a model on the lean client, its trial not on the model loop" if _lean(spec) else _blocks(spec)
    return AgentCall(mode="agent-thread", why=f"{reason}: the trial must be able to stop waiting")


def plan_execution(
    agents: AgentSet,
    executor: ExecutorName = "local",
    concurrency: int = 1,
    shared: bool = False,
    workers: int | None = None,
) -> ExecutionPlan:
    """The execution of a run of `agents` with these options (see the module's docstring);
    `workers`: the processes asked for (`--workers`), None to let the plan choose."""
    roles = agents.roles()
    blocking = [(role, why) for role, spec in roles if (why := _blocks(spec)) is not None]
    # one trial at a time with nothing to await (scripted agents, worker processes): one thread,
    # no model loop to start
    alone = concurrency <= 1 and executor == "local" and not any(_lean(spec) for _, spec in roles)
    pool: PoolMode = "threads" if blocking or alone else "loop"
    trials: TrialMode
    if executor == "ray":
        trials, why = "ray", "--executor ray"
    elif blocking:
        role, reason = blocking[0]
        trials, why = "threads", f"the {role} may block a thread: {reason}"
    elif alone:
        trials, why = "threads", "no model to await"
    else:
        trials, why = "loop", "no agent blocks a thread: scripted agents and models on the lean client"
    calls = {role: _call(spec, pool == "loop") for role, spec in roles}
    concurrency = max(1, concurrency)
    cap = worker_cap()
    if executor == "local" and concurrency > cap and any(call.mode == "worker" for call in calls.values()):
        why += f"; --concurrency {concurrency} capped at {cap} for worker processes"
        concurrency = cap
    processes, more = _processes(trials, calls, executor, concurrency, workers)
    return ExecutionPlan(
        executor=executor,
        concurrency=concurrency,
        trials=trials,
        pool=pool,
        why=why + more,
        processes=processes,
        shared=shared,
        calls=calls,
        trial_isolation=_isolation(roles, calls),
    )


def _processes(
    trials: TrialMode,
    calls: dict[Role, AgentCall],
    executor: ExecutorName,
    concurrency: int,
    workers: int | None,
) -> tuple[int, str]:
    """How many processes run the trials, and what the plan's `why` says of it."""
    if executor != "local" or workers == 1:
        return 1, ""
    kept = next((call.mode for call in calls.values() if call.mode in ("worker", "service")), None)
    if kept is not None:
        note = f"; --workers {workers} not used: {kept} agents keep one process" if workers else ""
        return 1, note
    cores = default_processes()
    if workers is not None:
        count = min(workers, concurrency)
        return (count, f"; {count} processes (--workers {workers})") if count > 1 else (1, "")
    if trials != "loop":
        return 1, ""
    count = min(cores, -(-concurrency // PER_PROCESS))
    if count <= 1:
        return 1, ""
    return count, f"; {count} processes: more than {PER_PROCESS} trials in flight, {cores} cores"


def _isolation(roles: list[tuple[Role, AgentSpec]], calls: dict[Role, AgentCall]) -> TrialIsolation:
    """The run's trial isolation: the weakest of its agents' (`TrialIsolation`)."""
    if any(calls[role].mode == "service" for role, _ in roles):
        return NOT_ISOLATED
    if any(spec.kind == "import" and calls[role].mode != "worker" for role, spec in roles):
        return IN_PROCESS
    if any(call.mode == "worker" for call in calls.values()):
        return "process per trial"
    return "castbench's own agents"


def worker_cap() -> int:
    """The most trials at once when agents run in worker processes on this machine: 4 per CPU
    (a worker mostly waits on its model), at least 8. `--concurrency 100000` with a worker agent
    ran 37 times slower than 8, every process starting at once."""
    return max(8, 4 * (os.cpu_count() or 1))


def default_processes() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
