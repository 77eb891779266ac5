"""Import-path agents in processes of their own: what reaches them is the serialized view, so no
task, sandbox or ground truth exists in their address space, and a frame walk, a heap scan or an
import finds nothing to read.

One pool of workers per (role, agent, declared needs); a worker is a template process that never
imports the agent and forks a fresh process for every trial (`castbench._agents.transports.serve`),
behind the OS sandbox (`castbench._agents.sandbox`) where the system has one, with a fresh scratch
folder and a minimal environment. Nothing an agent keeps (module state, a thread, a file, a
process it started) reaches its next trial: the interpreter starts once per concurrent trial
slot, the agent's process once per trial. The step time limit is enforced here: a trial's
process that does not answer in time is killed (`AgentTimeout`); one that crashes, hangs up or
raises anything at all ends the trial as the agent's failure (`AgentError`).
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from castbench._agents import confine, sandbox
from castbench._agents.paths import search_path
from castbench._agents.protocols import UserReply
from castbench._agents.sandbox import SandboxNeeds
from castbench._agents.spec import AgentSpec, AgentSpecError
from castbench._agents.transports.serve import (
    OUTPUT_CAP,
    STARTUP_S,
    _descendants,
    _status,
    import_overran,
    start_limit,
)
from castbench._agents.transports.wire import (
    ACTION,
    EVENTS,
    VERDICT,
    briefing_to_wire,
    decode,
    encode,
    from_agent,
    observation_to_wire,
)
from castbench._agents.views import CriticView, PolicyView, UserBriefing
from castbench._base.conversation import Action, Event, Usage, Verdict
from castbench._base.errors import AgentError, AgentTimeout, FatalInfrastructureError
from castbench._domain.task import ToolCall

__all__ = ["AgentOutput", "Probe", "WorkerTransport", "probe", "remove_stale_scratch", "shutdown_workers"]

SERVE = "castbench._agents.transports.serve"
"""The worker's module: `python -m SERVE FD PID`."""

_ISOLATION = ("-s", "-P", *(("-S",) if sys.flags.no_site else ()))
"""How the worker's interpreter starts: no user site folder (`-s`), nothing put before the
installed packages (`-P`: not its working directory), no site processing when castbench ran
without it. Not `-I`/`-E`: the environment it is given is already castbench's few variables (a
sandboxed worker's), and `PYTHONHASHSEED` among them keeps agents replayable."""

_END_S = 30.0
"""How long the template may take to kill and reap a trial's processes before it is killed."""


class AgentOutput(BaseModel):
    """What one trial's agent processes wrote to stdout and stderr (the first `OUTPUT_CAP`
    bytes), how much more was dropped, and how many processes it left running at its end."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = ""
    dropped: int = 0
    stray: int = 0
    ended: str = ""
    """How the trial's process ended: `code 3`, `signal 9`, `killed at the trial's end`."""

    def shown(self) -> str:
        """The text with castbench's notes on what was dropped and killed."""
        notes = []
        if self.dropped:
            notes.append(f"[castbench: {self.dropped} more bytes of output dropped]")
        if self.stray:
            notes.append(f"[castbench: {self.stray} process(es) the agent left running were killed]")
        return "\n".join([self.text.rstrip("\n"), *notes]).strip("\n")


def _read_report(fd: int) -> dict[str, Any]:
    """The keeper's report on a trial's end (`castbench._agents.transports.serve._keeper`): how its
    process ended and how many it left running. The keeper has exited: read to end of file."""
    lost = {"stray": 0, "ended": "its keeper was lost"}
    if fd < 0:
        return lost
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
        found = decode(b"".join(chunks))
        return {"stray": int(found["stray"]), "ended": str(found["ended"])}
    except (OSError, ValueError, KeyError, TypeError):
        return lost


def _read_output(fd: int) -> tuple[str, int]:
    """The first `OUTPUT_CAP` bytes of a trial's output file (every writer is dead by now) and
    how many more it held. castbench reads it, never the template (which forks the next trial)."""
    if fd < 0:
        return "", 0
    try:
        kept = os.pread(fd, OUTPUT_CAP, 0)
        size = os.fstat(fd).st_size
    except OSError:
        return "", 0
    return kept.decode(errors="replace"), max(0, size - len(kept))


def _stat(pid: int) -> list[str] | None:
    """`/proc/PID/stat` from its third field (the state) on; None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()
    except OSError:
        return None


def _end_directly(pid: int, cpu_limit: int) -> dict[str, Any]:
    """End a trial whose process is PID 1 of its namespace (the template forked it with no keeper),
    and say how it ended, read here in castbench from `/proc` (as root): the processes it had
    left running, then the kill (its namespace dies with it) and, from its zombie, which the
    template reaps unread only after this, its exit status and CPU time. So no process that forks
    a later trial ever holds any of it."""
    stat = _stat(pid)
    if stat is None:
        return {"stray": 0, "ended": "its process was lost"}
    exited = stat[0] == "Z"
    stray = 0 if exited else len(_descendants(pid))
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + _END_S
    while stat is not None and stat[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.0002)
        stat = _stat(pid)
    if stat is None or stat[0] != "Z":
        return {"stray": stray, "ended": "its process was lost"}
    status = int(stat[49])  # field 52: the exit status, as `waitpid` reports it
    cpu = sum(int(value) for value in stat[11:15]) / os.sysconf("SC_CLK_TCK")  # its own and reaped
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    said = "killed at the trial's end" if killed else _status(status)
    if cpu_limit and cpu >= cpu_limit:
        said = f"{said}: CPU time limit of {cpu_limit} s passed"
    return {"stray": stray, "ended": said}


_KEEPER = [False]
"""Give each trial a keeper even in a PID namespace of its own (as before the trial's process
became PID 1 there): for `bench/trial_isolation.py`'s comparison only."""

_ROOT: list[str] = []
_ROOT_LOCK = threading.Lock()


_PREFIX = "castbench-agents-"
_OWNER = ".castbench-owner"
"""In each scratch root: `PID START` of the castbench process that made it (its start time in
clock ticks, `/proc/PID/stat`'s 22nd field, so a reused PID is not taken for its owner)."""


def _started(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return ""


def remove_stale_scratch() -> list[str]:
    """Remove the scratch roots of castbench processes that are gone (killed: their `atexit` never
    ran), and with them every trial folder they held; what was removed. A folder with no owner
    on record is not castbench's: left alone."""
    removed: list[str] = []
    base = tempfile.gettempdir()
    try:
        names = [name for name in os.listdir(base) if name.startswith(_PREFIX)]
    except OSError:
        return removed
    for name in names:
        folder = os.path.join(base, name)
        try:
            with open(os.path.join(folder, _OWNER)) as handle:
                pid_text, _, start = handle.read().strip().partition(" ")
            pid = int(pid_text)
        except (OSError, ValueError):
            continue
        if pid == os.getpid() or (start and _started(pid) == start):
            continue  # its owner still runs
        sandbox.remove_scratch(folder)
        removed.append(folder)
    return removed


def _scratch_root() -> str:
    """One folder per castbench process holding every worker's trial folders, kept out of every
    worker's sandbox (a trial's own folder is granted to it alone, by the sandbox's entry). The
    first call removes what killed castbench processes left (`remove_stale_scratch`)."""
    with _ROOT_LOCK:
        if not _ROOT:
            remove_stale_scratch()
            root = tempfile.mkdtemp(prefix=_PREFIX)
            with open(os.path.join(root, _OWNER), "w") as owner:
                owner.write(f"{os.getpid()} {_started(os.getpid())}")
            _ROOT.append(root)
            sandbox.keep_out(_ROOT[0])
            atexit.register(sandbox.remove_scratch, _ROOT[0])
        return _ROOT[0]


class _Worker:
    """One worker: a template process of castbench's code that forks a fresh process per trial
    (`castbench._agents.transports.serve`), and the control pipe to it."""

    def __init__(self, role: str, target: str, plan: sandbox.Plan | None) -> None:
        """`plan`: the sandbox each trial's process enters before importing the agent (None: none)."""
        self.role = role
        self._lock = threading.Lock()
        self.folder = tempfile.mkdtemp(prefix="worker-", dir=_scratch_root())
        env: dict[str, str] | None = None  # None: castbench's own (unsandboxed)
        if plan is not None:
            env = sandbox.environment(plan.env, self.folder)
        ours, theirs = socket.socketpair()
        try:
            with theirs:
                self.process = subprocess.Popen(
                    [sys.executable, *_ISOLATION, "-m", SERVE, str(theirs.fileno()), str(os.getpid())],
                    pass_fds=[theirs.fileno()],
                    stdin=subprocess.DEVNULL,
                    cwd=self.folder,
                    env=env,
                )
        except BaseException:
            ours.close()
            sandbox.remove_scratch(self.folder)
            raise
        self.control_socket = ours
        self.connection = Connection(os.dup(ours.fileno()))
        self.limits = confine.limits_from_env()
        self.target = target
        self.start_s = start_limit()
        """How long the agent's import may take in a trial's process (the template holds its
        probe to it too, and answers before castbench's own wait runs out)."""
        hello = {
            "role": role,
            "target": target,
            "sys_path": search_path(),  # the agent folders, then castbench's own path
            "domain_packages": sandbox.protected_packages(),
            "folder": self.folder,
            "sandbox": None if plan is None else {"plan": plan.model_dump()},
            "limits": dataclasses.asdict(self.limits),
            "pidns": plan is not None and confine.can_unshare_pid(),
            "user": plan is not None,
            "keeper": _KEEPER[0],
            "start_s": self.start_s,
        }
        self.connection.send_bytes(encode(hello))
        self.loaded = self._control(None, "its start", 2 * self.start_s + STARTUP_S, send=False)
        if "error" in self.loaded:
            self.kill()
            if self.loaded["kind"] == "fatal":
                raise FatalInfrastructureError(self.loaded["error"])
            raise AgentSpecError(self.loaded["error"])

    def _control(
        self, message: dict[str, Any] | None, what: str, limit: float, send: bool = True
    ) -> dict[str, Any]:
        """A request to the template (castbench's own code) and its answer. A template that does
        not answer is killed; the trial then ends as the agent's (an agent could have caused it
        where the kernel does not scope its signals), never as a retry."""
        try:
            if send:
                self.connection.send_bytes(encode(message or {}))
            if not self.connection.poll(limit):
                raise TimeoutError(f"no answer within {limit:g} s")
            return decode(self.connection.recv_bytes())
        except (EOFError, OSError, ValueError) as exc:
            self.kill()
            raise AgentError(
                f"{self.role} worker process exited (code {self.process.poll()}) during {what}: {exc!r}"
            ) from exc

    def start_trial(self) -> _TrialProcess:
        """Fork a fresh process for one trial, which imports the agent in its sandbox."""
        with self._lock:
            started = self._control({"op": "trial"}, "a trial's start", STARTUP_S)
            try:
                _, fds, _, _ = socket.recv_fds(self.control_socket, 1, 3)
            except OSError as exc:
                self.kill()
                raise AgentError(f"{self.role} worker process did not start a trial: {exc!r}") from exc
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            self.kill()
            raise AgentError(f"{self.role} worker process did not start a trial")
        direct = 0 if started.get("keeper", True) else int(started["started"])
        trial = _TrialProcess(self, Connection(fds[0]), fds[1], fds[2], direct)
        entered = trial.answer("entering its sandbox", self.start_s)
        if "error" in entered:  # castbench's own code, before the agent's: what castbench saw
            self.end_trial(trial.output_fd, trial.report_fd, direct)
            os.close(trial.output_fd)
            os.close(trial.report_fd)
            self.kill()
            raise FatalInfrastructureError(entered["error"])
        try:
            loaded = trial.answer("its import", self.start_s)
        except AgentTimeout:  # its process was stopped: the agent's failure, said plainly
            raise AgentError(import_overran(self.role, self.target, self.start_s)) from None
        if "error" in loaded:
            trial.end()
            raise AgentError(f"{self.role} could not be loaded for this trial: {loaded['error']}")
        return trial

    def end_trial(self, output: int = -1, report: int = -1, direct: int = 0) -> AgentOutput:
        """Kill and reap every process of the trial; what it wrote (`output`: its output file)
        and how it ended (`report`: its keeper's, written before the template answers; with
        `direct`, the PID of a trial's process that is PID 1 of its namespace, read here first)."""
        ended = _end_directly(direct, self.limits.cpu) if direct else None
        with self._lock:
            self._control({"op": "end"}, "the end of a trial", _END_S)
        text, dropped = _read_output(output)
        ended = ended or _read_report(report)
        return AgentOutput(text=text, dropped=dropped, stray=ended["stray"], ended=ended["ended"])

    @property
    def alive(self) -> bool:
        return self.process.poll() is None and not self.connection.closed

    def kill(self) -> None:
        """Stop the process and close the pipe (once, whichever thread gets here first). Its
        trial's process dies with it (its parent-death signal)."""
        if self.connection.closed:
            return
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        with suppress(OSError):
            self.connection.close()
            self.control_socket.close()
        sandbox.remove_scratch(self.folder)


class _TrialProcess:
    """One trial's agent process and the pipe to it; ended (its processes killed) exactly once."""

    def __init__(
        self, worker: _Worker, connection: Connection, output: int, report: int, direct: int = 0
    ) -> None:
        self.worker, self.connection, self.output_fd, self.report_fd = worker, connection, output, report
        self.direct = direct
        """The PID of the trial's process when it is PID 1 of its namespace (no keeper): castbench
        reads how it ended and ends it (0: its keeper does)."""
        self.role = worker.role
        self._lock = threading.Lock()
        self.output: AgentOutput | None = None

    def answer(self, what: str, limit: float | None, deadline: float | None = None) -> dict[str, Any]:
        try:
            if deadline is None and limit is not None:
                deadline = time.monotonic() + limit
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self.connection.poll(wait):
                self.end()
                raise AgentTimeout(
                    f"{self.role} did not answer {what} within {limit:g} s; its process was stopped"
                )
            return decode(self.connection.recv_bytes())
        except (EOFError, OSError, ValueError) as exc:
            ended = self.end().ended
            raise AgentError(f"{self.role} agent process exited ({ended}) during {what}: {exc!r}") from exc

    def request(
        self, message: dict[str, Any], timeout: float | None, perform: Callable[[ToolCall], Any] | None
    ) -> dict[str, Any]:
        """Send one request and wait for its answer, running the user-side tools it asks for on
        the way. Anything but a clean answer ends the trial's process (never half a conversation).
        Whatever the agent's process answers is the agent's: an error it reports is an
        `AgentError`, whatever class it names."""
        what = message.get("method", message["op"])
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self.connection.send_bytes(encode(message))
            while True:
                answer = self.answer(what, timeout, deadline)
                if "perform" not in answer or perform is None:
                    break
                observation = perform(ToolCall.model_validate(answer["perform"]))
                self.connection.send_bytes(encode({"observation": observation_to_wire(observation)}))
        except (OSError, ValueError) as exc:
            self.end()
            raise AgentError(
                f"{self.role} agent process could not be reached during {what}: {exc!r}"
            ) from exc
        except BaseException:
            self.end()
            raise
        if "error" in answer:
            raise AgentError(str(answer["error"]))
        return answer

    @property
    def ended(self) -> bool:
        return self.output is not None

    def end(self) -> AgentOutput:
        """Kill and reap the trial's processes (a worker that cannot is killed whole)."""
        with self._lock:
            if self.output is None:
                with suppress(OSError):
                    self.connection.close()
                try:
                    self.output = self.worker.end_trial(self.output_fd, self.report_fd, self.direct)
                except AgentError:
                    self.output = AgentOutput(text="[castbench: the worker process was lost]")
                finally:
                    for fd in (self.output_fd, self.report_fd):
                        with suppress(OSError):
                            os.close(fd)
            return self.output


class _Pool:
    """Idle workers for one (role, agent, declared needs), started on demand and kept for the
    next trial. Whether they are sandboxed is decided per worker start (`sandbox.support`)."""

    def __init__(self, role: str, target: str, needs: SandboxNeeds) -> None:
        self.role, self.target, self.needs = role, target, needs
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def _plan(self) -> sandbox.Plan | None:
        _scratch_root()  # kept out before the plan is made
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


_POOLS: dict[tuple[str, str, tuple[str, ...], SandboxNeeds, confine.TrialLimits, float], _Pool] = {}
_POOLS_LOCK = threading.Lock()


def _pool(role: str, target: str, needs: SandboxNeeds) -> _Pool:
    key = (role, target, tuple(search_path()), needs, confine.limits_from_env(), start_limit())
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
    deprecations: tuple[dict[str, Any], ...] = ()
    """castbench's deprecation warnings its import raised (`castbench._base.deprecation.caught`)."""


def probe(role: str, target: str) -> Probe:
    """Import the agent in a worker under the strictest sandbox and check it implements the
    role's protocol; whether it asks for privilege and what it declares it needs. The worker
    stays in the pool for the first trial unless those needs call for a worker started with
    them. Raises `AgentSpecError`."""
    try:
        start_limit()
    except ValueError as exc:
        raise AgentSpecError(f"{role} '{target}': {exc}") from None
    pool = _pool(role, target, SandboxNeeds())
    try:
        worker = pool.acquire()
    except (AgentError, AgentTimeout) as exc:
        raise AgentSpecError(f"{role} '{target}': its worker process did not start: {exc}") from exc
    found = Probe(
        bool(worker.loaded["privileged"]),
        SandboxNeeds.model_validate(worker.loaded["needs"]),
        tuple(worker.loaded.get("deprecations", ())),
    )
    pool.release(worker)
    if found.privileged or not found.needs.empty:  # privileged agents run in castbench's process;
        pool.close()  # the others' trials run in a pool of workers started with their needs
    return found


@dataclass
class _Remote:
    """The proxy of one trial's agent: the role's protocol methods, forwarded to the trial's own
    process (forked by its worker's template for this trial alone)."""

    pool: _Pool
    worker: _Worker | None
    trial: _TrialProcess
    timeout: float | None
    perform: Callable[[ToolCall], Any] | None = None
    usage: Usage | None = None
    output: AgentOutput | None = None
    """What the agent's processes wrote, once the trial is over."""
    _shown: tuple[Event, ...] = field(default=())
    _busy: bool = False
    """A request is in flight (the trial may have stopped waiting for it: time limit, Ctrl-C)."""

    def _request(self, message: dict[str, Any]) -> Any:
        if self.worker is None or self.trial.ended:
            raise AgentError(f"{self.pool.role} agent process is gone")
        self._busy = True
        try:
            return self.trial.request(message, self.timeout, self.perform).get("result")
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
        """End the trial: its usage, then every process it started is killed and reaped (also
        when it was abandoned mid-call: the waiting thread sees its pipe close), and the worker
        goes back to the pool for the next trial's fresh process."""
        worker, self.worker = self.worker, None
        if worker is None:
            return
        if not self._busy and not self.trial.ended:
            try:
                usage = self.trial.request({"op": "close"}, STARTUP_S, None)["usage"]
                self.usage = None if usage is None else from_agent(Usage.model_validate(usage))
            except (AgentError, AgentTimeout):
                pass
        self.output = self.trial.end()
        self.pool.release(worker)


class _RemotePolicy(_Remote):
    def propose(self, view: PolicyView) -> Action:
        message = {"op": "call", "method": "propose", **self._delta(view.conversation)}
        return from_agent(ACTION.validate_python(self._request(message)))


class _RemoteCritic(_Remote):
    def verify(self, view: CriticView) -> Verdict:
        proposal = ACTION.dump_python(view.proposal, mode="python")
        message = {"op": "call", "method": "verify", "proposal": proposal, **self._delta(view.conversation)}
        return from_agent(VERDICT.validate_python(self._request(message)))


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
        try:
            trial = worker.start_trial()
        except BaseException:
            pool.release(worker)
            raise
        remote = _PROXIES[self.spec.role](pool, worker, trial, timeout, perform)
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
