"""Import-path agents in a process of their own: what reaches them is the serialized view, so no
task, sandbox or ground truth exists in their address space, and a frame walk, a heap scan or an
import finds nothing to read.

Each worker runs behind the OS sandbox (`castbench.agents.sandbox`) where the system has one: a
fresh scratch folder, a minimal environment, no reading of castbench's tasks, stores or process.

One pool of workers per (role, agent); a worker hosts one trial at a time and builds a fresh
agent instance for each, so the interpreter starts once per concurrent trial slot, not once per
trial. The step time limit is enforced here: a worker that does not answer in time is killed
(`AgentTimeout`), one that crashes or hangs up ends the trial as the agent's failure
(`AgentError`); either way the pool starts a fresh worker for the next trial.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

from castbench.agents import sandbox
from castbench.agents.protocols import UserReply
from castbench.agents.registry import AgentSpec, AgentSpecError
from castbench.agents.sandbox import SandboxNeeds
from castbench.agents.transports.wire import (
    ACTION,
    EVENTS,
    VERDICT,
    briefing_to_wire,
    decode,
    encode,
    observation_to_wire,
)
from castbench.agents.views import CriticView, PolicyView, UserBriefing
from castbench.conversation import Action, Event, Usage, Verdict
from castbench.domain import ToolCall
from castbench.errors import AgentError, AgentTimeout, FatalInfrastructureError, InfrastructureError

__all__ = ["Probe", "WorkerTransport", "probe", "shutdown_workers"]

_STARTUP_S = 120.0
"""How long a worker may take to start and import the agent (a cold interpreter on a busy machine)."""


SERVE = "castbench.agents.transports.serve"
"""The worker's module: `python -m SERVE FD PID`."""


class _Worker:
    """One agent process and the pipe to it."""

    def __init__(self, role: str, target: str, plan: sandbox.Plan | None) -> None:
        """`plan`: the sandbox the worker enters before importing the agent (None: none)."""
        self.role = role
        self._lock = threading.Lock()
        self.scratch: str | None = None
        env: dict[str, str] | None = None  # None: castbench's own (unsandboxed)
        if plan is not None:
            self.scratch = sandbox.scratch()
            env = sandbox.environment(plan.env, self.scratch)
        ours, theirs = socket.socketpair()
        try:
            with theirs:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", SERVE, str(theirs.fileno()), str(os.getpid())],
                    pass_fds=[theirs.fileno()],
                    stdin=subprocess.DEVNULL,
                    cwd=self.scratch,
                    env=env,
                )
        except BaseException:
            ours.close()
            self._remove_scratch()
            raise
        self.connection = Connection(ours.detach())
        hello = {
            "role": role,
            "target": target,
            "sys_path": [os.path.abspath(entry) for entry in sys.path],  # its cwd is not ours
            "domain_packages": sandbox.protected_packages(),
            "sandbox": None if plan is None else {"plan": plan.model_dump(), "scratch": self.scratch},
        }
        self.connection.send_bytes(encode(hello))
        self.loaded = self._answer("its start", _STARTUP_S)
        if "error" in self.loaded:
            self.kill()
            if self.loaded["kind"] == "fatal":
                raise FatalInfrastructureError(self.loaded["error"])
            raise AgentSpecError(self.loaded["error"])

    def _answer(self, what: str, limit: float | None, deadline: float | None = None) -> dict[str, Any]:
        try:
            if deadline is None and limit is not None:
                deadline = time.monotonic() + limit
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self.connection.poll(wait):
                self.kill()
                raise AgentTimeout(
                    f"{self.role} did not answer {what} within {limit:g} s; its worker process was stopped"
                )
            return decode(self.connection.recv_bytes())
        except (EOFError, OSError, ValueError) as exc:
            self.kill()
            raise AgentError(
                f"{self.role} worker process exited (code {self.process.poll()}) during {what}: {exc!r}"
            ) from exc

    def request(
        self, message: dict[str, Any], timeout: float | None, perform: Callable[[ToolCall], Any] | None
    ) -> dict[str, Any]:
        """Send one request and wait for its answer, running the user-side tools it asks for on
        the way. Anything but a clean answer leaves the worker dead (never half a conversation)."""
        what = message.get("method", message["op"])
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self.connection.send_bytes(encode(message))
            while True:
                answer = self._answer(what, timeout, deadline)
                if "perform" not in answer or perform is None:
                    break
                observation = perform(ToolCall.model_validate(answer["perform"]))
                self.connection.send_bytes(encode({"observation": observation_to_wire(observation)}))
        except (OSError, ValueError) as exc:
            self.kill()
            raise AgentError(
                f"{self.role} worker process could not be reached during {what}: {exc!r}"
            ) from exc
        except BaseException:
            self.kill()
            raise
        if "error" in answer:
            raise {"fatal": FatalInfrastructureError, "infra": InfrastructureError}.get(
                answer["kind"], AgentError
            )(answer["error"])
        return answer

    @property
    def alive(self) -> bool:
        return self.process.poll() is None and not self.connection.closed

    def kill(self) -> None:
        """Stop the process and close the pipe (once, whichever thread gets here first)."""
        with self._lock:
            if self.connection.closed:
                return
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.connection.close()
            self._remove_scratch()

    def _remove_scratch(self) -> None:
        if self.scratch is not None:
            sandbox.remove_scratch(self.scratch)


class _Pool:
    """Idle workers for one (role, agent, declared needs), started on demand and kept for the
    next trial. Whether they are sandboxed is decided per worker start (`sandbox.support`)."""

    def __init__(self, role: str, target: str, needs: SandboxNeeds) -> None:
        self.role, self.target, self.needs = role, target, needs
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def _plan(self) -> sandbox.Plan | None:
        return sandbox.plan(self.target, self.needs) if sandbox.support().available else None

    def acquire(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    return worker
                worker.kill()  # reaps it and removes its scratch folder
        return _Worker(self.role, self.target, self._plan())

    def release(self, worker: _Worker) -> None:
        if worker.alive:
            with self._lock:
                self._idle.append(worker)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


_POOLS: dict[tuple[str, str, tuple[str, ...], SandboxNeeds], _Pool] = {}
_POOLS_LOCK = threading.Lock()


def _pool(role: str, target: str, needs: SandboxNeeds) -> _Pool:
    if os.getcwd() not in sys.path:  # as for in-process imports: the working directory counts
        sys.path.append(os.getcwd())
    key = (role, target, tuple(sys.path), needs)
    with _POOLS_LOCK:
        if key not in _POOLS:
            _POOLS[key] = _Pool(role, target, needs)
        return _POOLS[key]


@atexit.register
def shutdown_workers() -> None:
    """Stop every idle worker (they would exit on their own once this process has gone)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
    for pool in pools:
        pool.close()


class Probe(NamedTuple):
    privileged: bool
    """It asks for privilege (it will run in castbench's process)."""
    needs: SandboxNeeds
    """What it declares it needs beyond the strictest sandbox."""


def probe(role: str, target: str) -> Probe:
    """Import the agent in a worker under the strictest sandbox and check it implements the
    role's protocol; whether it asks for privilege and what it declares it needs. The worker
    stays in the pool for the first trial unless those needs call for a worker started with
    them. Raises `AgentSpecError`."""
    pool = _pool(role, target, SandboxNeeds())
    try:
        worker = pool.acquire()
    except (AgentError, AgentTimeout) as exc:
        raise AgentSpecError(f"{role} '{target}': its worker process did not start: {exc}") from exc
    found = Probe(bool(worker.loaded["privileged"]), SandboxNeeds.model_validate(worker.loaded["needs"]))
    pool.release(worker)
    if found.privileged or not found.needs.empty:  # privileged agents run in castbench's process;
        pool.close()  # the others' trials run in a pool of workers started with their needs
    return found


@dataclass
class _Remote:
    """The proxy of one trial's agent: the role's protocol methods, forwarded to its worker."""

    pool: _Pool
    worker: _Worker | None
    timeout: float | None
    perform: Callable[[ToolCall], Any] | None = None
    usage: Usage | None = None
    _shown: tuple[Event, ...] = field(default=())
    _busy: bool = False
    """A request is in flight (the trial may have stopped waiting for it: time limit, Ctrl-C)."""

    def _request(self, message: dict[str, Any]) -> Any:
        worker = self.worker
        if worker is None:
            raise AgentError(f"{self.pool.role} worker process is gone")
        self._busy = True
        try:
            return worker.request(message, self.timeout, self.perform).get("result")
        finally:
            self._busy = False

    def _delta(self, conversation: tuple[Event, ...]) -> dict[str, Any]:
        """The events the worker has not seen: the conversation after the prefix it shares with
        what was sent last (events are immutable, so sameness is identity)."""
        keep = 0
        for shown, event in zip(self._shown, conversation, strict=False):
            if shown is not event:
                break
            keep += 1
        self._shown = conversation
        return {"keep": keep, "events": EVENTS.dump_python(list(conversation[keep:]), mode="python")}

    def close(self) -> None:
        """End the trial: the worker drops the instance and goes back to the pool."""
        worker, self.worker = self.worker, None
        if worker is None or not worker.alive:
            return
        if self._busy:  # abandoned mid-call: the agent may still be at work, so it goes; the
            worker.process.kill()  # waiting thread sees the pipe close and cleans up
            return
        try:
            usage = worker.request({"op": "close"}, _STARTUP_S, None)["usage"]
        except (AgentError, AgentTimeout):
            return
        self.usage = None if usage is None else Usage.model_validate(usage)
        self.pool.release(worker)


class _RemotePolicy(_Remote):
    def propose(self, view: PolicyView) -> Action:
        message = {"op": "call", "method": "propose", **self._delta(view.conversation)}
        return ACTION.validate_python(self._request(message))


class _RemoteCritic(_Remote):
    def verify(self, view: CriticView) -> Verdict:
        proposal = ACTION.dump_python(view.proposal, mode="python")
        message = {"op": "call", "method": "verify", "proposal": proposal, **self._delta(view.conversation)}
        return VERDICT.validate_python(self._request(message))


class _RemoteUser(_Remote):
    def open(self) -> str:
        return str(self._request({"op": "call", "method": "open"}))

    def reply(self, message: str) -> UserReply:
        answer = self._request({"op": "call", "method": "reply", "message": message})
        return UserReply(text=answer["text"], stop=bool(answer["stop"]))


_PROXIES: dict[str, type[_Remote]] = {"policy": _RemotePolicy, "critic": _RemoteCritic, "user": _RemoteUser}


@dataclass(frozen=True)
class WorkerTransport:
    """An import-path agent reached through its pool of worker processes."""

    spec: AgentSpec
    isolated = True
    drives = False

    def open(self, briefing: Any, timeout: float | None = None) -> Any:
        pool = _pool(self.spec.role, self.spec.name, self.spec.sandbox_needs)
        perform = briefing.perform if isinstance(briefing, UserBriefing) else None
        try:
            worker = pool.acquire()
        except AgentSpecError as exc:  # it loaded when resolved: what changed is the agent's
            raise AgentError(str(exc)) from exc
        remote = _PROXIES[self.spec.role](pool, worker, timeout, perform)
        try:
            remote._request(
                {"op": "open", "briefing": briefing_to_wire(briefing), "params": self.spec.params}
            )
        except BaseException:
            remote.close()
            raise
        return remote

    def release(self, agent: Any) -> None:
        agent.close()
