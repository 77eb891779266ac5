"""The worker process: a template of castbench's code that forks a fresh process for every trial
of one role's import-path agent, and holds nothing of castbench's tasks, sandboxes or ground truth.

Started by `castbench._agents.transports.worker` as `python -m castbench._agents.transports.serve FD
PID` with one end of a socket pair on FD (the control pipe) and castbench's process id. It learns
its role, the agent's import path and its sandbox from the first message, and never imports the
agent itself: each trial's process (forked ahead, as soon as the previous trial ended) takes its
own process group, closes every descriptor but its own socket (handed to castbench over the
control pipe), writes its output into an in-memory file castbench reads, gets a fresh scratch
folder, takes its bounds and a user id of its own (`castbench._agents.confine`), enters the
sandbox (the kernel's wall: `castbench._agents.sandbox`), refuses imports of the installed domain
packages (they hold the tasks' ground truth), imports the agent and serves that trial alone.
Where castbench can make a PID namespace per trial, the template forks each trial's process into
one of its own, as its PID 1: when it dies, the kernel kills every process it started, and at the
trial's end castbench (never the template) reads from `/proc` how it ended (its exit status and
CPU time, from its zombie; the processes it left running) and kills it; the template then reaps
it with `waitid` and no status to fill. Where there is no namespace, each trial's process is
forked by the trial's keeper, itself forked from the template for that trial: at the trial's end
the keeper kills and reaps every process the trial started and reports how it ended to castbench
directly. Either way the template never reads anything a trial leaves (issue 56): it forks every
later trial, and its memory is theirs to read.

The import guard stays behind the sandbox: where there is none (another OS, `CASTBENCH_SANDBOX=off`)
it is all that keeps a careless `import` of a domain package out, and behind it, it turns the
kernel's refusal (a `PermissionError` deep in the import system) into a plain `ImportError`. The
template ignores Ctrl-C (castbench decides what an interruption does) and exits when castbench
closes the pipe or dies; a trial's process dies with the template (a parent-death signal).
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import importlib.abc
import os
import selectors
import signal
import socket
import sys
import tempfile
import time
import traceback
from contextlib import suppress
from multiprocessing.connection import Connection
from typing import Any

from castbench._agents import confine, sandbox
from castbench._agents.paths import AGENT_PATH_ENV
from castbench._agents.precompiled import Precompiled
from castbench._agents.protocols import UserReply, output_problem
from castbench._agents.spec import AgentSpecError, built_problem, import_target, protocol_problem
from castbench._agents.transports.wire import (
    ACTION,
    EVENTS,
    VERDICT,
    briefing_from_wire,
    decode,
    encode,
    observation_from_wire,
)
from castbench._agents.views import CriticView, PolicyView
from castbench._base.conversation import (
    Event,
    MalformedAction,
    ReplyAction,
    ToolCallAction,
    Usage,
    Verdict,
)
from castbench._base.deprecation import caught
from castbench._domain.task import ToolCall
from castbench._domain.tools import Observation

STARTUP_S = 120.0
"""How long importing the agent may take by default (a cold interpreter on a busy machine):
`CASTBENCH_AGENT_START_S` changes it (`start_limit`). An agent whose import takes longer (a module
that loops or blocks at import) fails to load, named, instead of holding castbench."""
START_ENV = "CASTBENCH_AGENT_START_S"


def start_limit(text: str | None = None) -> float:
    """Seconds an agent's import may take: `CASTBENCH_AGENT_START_S`, else `STARTUP_S`.
    `ValueError` naming the variable on a bad value."""
    text = os.environ.get(START_ENV, "") if text is None else text
    if not text.strip():
        return STARTUP_S
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{START_ENV}: '{text}' is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{START_ENV}: '{text}' must be a positive number of seconds")
    return value


def import_overran(role: str, target: str, limit: float) -> str:
    """What an agent whose import did not finish in time is told."""
    return (
        f"{role} '{target}': importing it did not finish within {limit:g} s, so its process was "
        f"stopped (an agent's module must not loop or block at import; {START_ENV} sets the limit, "
        f"{STARTUP_S:g} s by default)"
    )


OUTPUT_CAP = 64 * 1024
"""Bytes of an agent's stdout and stderr kept per trial; the rest is counted, not kept."""

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_libc = ctypes.CDLL(None, use_errno=True)


class _RefuseDomains(importlib.abc.MetaPathFinder):
    """Keeps the domain packages (tasks, ground truth) and their data packages out of the agent's
    process: a convention the agent can undo, the sandbox being the wall."""

    def __init__(self, packages: list[str]) -> None:
        self.packages = frozenset(packages)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.partition(".")[0] in self.packages:
            raise ImportError(
                f"'{fullname}' is a castbench domain (or domain data) package: an agent's worker "
                "may not import it"
            )


class _Host:
    """The agent of the current trial and what it has been shown so far."""

    def __init__(self, factory: Any, connection: Connection, role: str = "policy", target: str = "") -> None:
        self.factory = factory
        self.connection = connection
        self.role, self.target = role, target
        self.agent: Any = None
        self.briefing: Any = None
        self.conversation: tuple[Event, ...] = ()

    def _perform(self, call: ToolCall) -> Observation:
        """A user-side tool runs on the trial's state, which stays in castbench: ask for it."""
        self.connection.send_bytes(encode({"perform": call.model_dump(mode="json")}))
        return observation_from_wire(decode(self.connection.recv_bytes())["observation"])

    def _conversation(self, message: dict[str, Any]) -> tuple[Event, ...]:
        added = tuple(EVENTS.validate_python(message["events"]))
        self.conversation = self.conversation[: message["keep"]] + added
        return self.conversation

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message["op"]
        if op == "open":
            self.conversation = ()
            self.briefing = briefing_from_wire(message["briefing"], self._perform)
            self.agent = self.factory(self.briefing, **message["params"])
            if not isinstance(self.factory, type):  # a factory function: known once called
                problem = built_problem(self.role, self.target, self.agent)  # type: ignore[arg-type]
                if problem is not None:
                    raise _Unusable(problem)
            return {}
        if op == "close":
            usage = getattr(self.agent, "usage", None)
            self.agent = self.briefing = None
            return {"usage": usage.model_dump(mode="json") if isinstance(usage, Usage) else None}
        return {"result": self._call(message["method"], message)}

    def _call(self, method: str, message: dict[str, Any]) -> Any:
        if method == "propose":
            view = PolicyView(self.briefing, self._conversation(message))
            action = _checked("policy", self.agent.propose(view), _ACTIONS, "action")
            return ACTION.dump_python(action, mode="python")  # json escapes what it holds
        if method == "verify":
            proposal = ACTION.validate_python(message["proposal"])
            verdict = self.agent.verify(CriticView(self.briefing, self._conversation(message), proposal))
            return VERDICT.dump_python(_checked("critic", verdict, Verdict, "verdict"), mode="python")
        if method == "open":
            return _checked("user", self.agent.open(), str, "opening")
        reply = _checked("user", self.agent.reply(message["message"]), UserReply, "reply")
        return {"text": _checked("user", reply.text, str, "reply text"), "stop": reply.stop}


_ACTIONS = (ToolCallAction, ReplyAction, MalformedAction)


class _Unusable(Exception):
    """The agent answered, with something that cannot be used (said as the trial loop says it)."""


def _checked(role: str, value: Any, expected: type | tuple[type, ...], what: str) -> Any:
    problem = output_problem(role, value, expected, what)
    if problem is not None:
        raise _Unusable(problem)
    return value


def _failure(role: str, exc: BaseException) -> dict[str, Any]:
    """An exception of the agent's, as the message castbench turns into the trial's outcome:
    always the agent's failure, whatever it is called. castbench's own infrastructure errors
    raised (or unpickled, or faked) here are the agent's too: a retry is castbench's to order for
    what it observed itself, never the agent's to buy by raising the right class."""
    if isinstance(exc, _Unusable):
        return {"error": str(exc), "kind": "agent"}
    return {"error": f"{role} raised {exc!r}\n{traceback.format_exc()}", "kind": "agent"}


def _load(hello: dict[str, Any], compiled: Precompiled) -> tuple[Any, dict[str, Any]]:
    sys.path[:] = hello["sys_path"]
    sys.meta_path[:0] = [_RefuseDomains(hello["domain_packages"]), compiled]
    try:
        with caught() as deprecations:  # reported to castbench, which shows them (once per run)
            factory = import_target(hello["target"])
    except AgentSpecError as exc:
        return None, {"error": str(exc), "kind": "spec"}
    problem = protocol_problem(hello["role"], hello["target"], factory)
    if problem is not None:
        return None, {"error": problem, "kind": "spec"}
    try:
        needs = sandbox.declared_needs(factory, hello["target"])
    except ValueError as exc:
        return None, {"error": f"{hello['role']} {exc}", "kind": "spec"}
    privileged = bool(getattr(factory, "privileged", False))
    return factory, {"privileged": privileged, "needs": needs.model_dump(), "deprecations": deprecations}


class _Trial:
    """One trial's processes, seen from the template: the first it forked, the file its output
    goes to and its scratch folder. The template never reads the output (castbench does): a
    process that never held a trial's data forks the next one (issue 56)."""

    def __init__(
        self, pid: int, output: int, scratch: str, ours: socket.socket, report: int, go: int
    ) -> None:
        self.pid, self.output, self.scratch = pid, output, scratch
        """`pid`: the trial's keeper (castbench's code: it forks the agent's process and reaps it)."""
        self.socket: socket.socket | None = ours
        """castbench's end of the trial's socket, until it is handed over."""
        self.report, self.go = report, go
        """The keeper's report (how the trial ended), read by castbench; the pipe that tells the
        keeper the trial is over."""


def _children() -> list[int]:
    """This process's children, zombies included (the template is single-threaded)."""
    return _children_of(os.getpid())


def _children_of(pid: int) -> list[int]:
    """The children of `pid` (as `/proc` numbers it), zombies included."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(child) for child in listing.read().split()]
    except OSError:  # no CONFIG_PROC_CHILDREN: the process table, by parent (none without /proc)
        found = []
        for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
            if entry.isdigit():
                with suppress(OSError), open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rpartition(")")[2].split()[1]) == pid:
                        found.append(int(entry))
        return found


def _descendants(pid: int) -> list[int]:
    """The processes below `pid` still running (its PID namespace's, when it has one)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            with suppress(OSError, ValueError), open(f"/proc/{current}/task/{task}/children") as listing:
                children = [int(child) for child in listing.read().split()]
                found += [child for child in children if _running(child)]
                pending += children
    return found


def _reap_everything(first: int, cpu_limit: int = 0) -> tuple[int, str]:
    """Kill and reap every process below the template, however it left its parent (a double
    fork, `setsid`): the template is their subreaper, so orphans come back to it, and a killed
    parent's children are already reparented when its zombie is reaped. The number killed
    besides `first` (the trial's process) and how `first` ended: with `CPU time limit` when it
    had spent `cpu_limit` seconds (the kernel's kill at the limit and castbench's at the trial's
    end look alike otherwise)."""
    ended, cpu = "", 0.0
    with suppress(ChildProcessError):
        pid, status, usage = os.wait4(first, os.WNOHANG)
        if pid:  # it had exited on its own
            ended, cpu = _status(status), usage.ru_utime + usage.ru_stime
    inside = set(_descendants(first)) if not ended else set()  # in its namespace: killed with it
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(first, signal.SIGKILL)  # its process group, at once
    killed: set[int] = set(inside)
    while True:
        children = _children()
        if not children:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
                if pid == 0:
                    time.sleep(0.0005)  # one is exiting and not yet listed
                elif pid == first:
                    cpu = max(cpu, usage.ru_utime + usage.ru_stime)
                continue
            except ChildProcessError:
                said = ended or "killed at the trial's end"
                if cpu_limit and cpu >= cpu_limit:
                    said = f"{said}: CPU time limit of {cpu_limit} s passed"
                return len(killed - {first}), said
        for pid in children:
            if _running(pid):
                killed.add(pid)
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with suppress(ChildProcessError):
                _, status, usage = os.wait4(pid, 0)
                if pid == first:
                    cpu = max(cpu, usage.ru_utime + usage.ru_stime)
                if (
                    pid == first
                    and not ended
                    and not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL)
                ):
                    ended = _status(status)  # it exited on its own just before the kill


def _running(pid: int) -> bool:
    """Not a zombie (one that exited and was not reaped yet is not left running)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {confine.signal_name(os.WTERMSIG(status))}"
    return f"code {os.waitstatus_to_exitcode(status)}"


def _discard(scratch: str) -> None:
    """Remove a finished trial's scratch folder (its processes are all gone)."""
    if scratch:
        sandbox.remove_scratch(scratch)


def _output_file() -> int:
    """Where a trial's stdout and stderr go: a file in memory (no path anywhere), handed to
    castbench with the trial's socket and read there, never by this process, which forks the
    next trial (its memory must never have held a trial's data). `RLIMIT_FSIZE` bounds it."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("castbench-trial-output", os.MFD_CLOEXEC)
    handle = tempfile.TemporaryFile()  # noqa: SIM115 (elsewhere: an unnamed temporary file)
    fd = os.dup(handle.fileno())
    handle.close()
    return fd


def _prctl(option: int, value: int) -> None:
    """Linux's `prctl`; elsewhere nothing (a trial's process group is then all that is killed)."""
    if not sys.platform.startswith("linux"):
        return
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl({option}): {os.strerror(code)}")


class _Template:
    """The worker's own process: castbench's code only, never the agent's. It forks one process
    per trial, which enters the trial's sandbox with a fresh scratch folder, imports the agent and
    serves that trial alone; when the trial ends, it and everything it started are killed.

    Forking before the agent's import is the point: nothing the agent does at import (module
    state, a thread, an `os.register_at_fork` hook, an open descriptor, a shared mapping) exists
    in the template, so no trial inherits anything a previous one left."""

    def __init__(self, hello: dict[str, Any], control: Connection, parent: int) -> None:
        self.hello, self.control, self.parent = hello, control, parent
        self.folder: str = hello["folder"]
        self.control_socket = socket.socket(fileno=os.dup(control.fileno()))
        self.trial: _Trial | None = None
        self.pid = os.getpid()
        sandboxed = hello.get("sandbox")
        plan = None if sandboxed is None else sandbox.Plan.model_validate(sandboxed["plan"])
        self.plan = None if plan is None else sandbox.Prepared(plan)
        self.limits = confine.TrialLimits(**hello.get("limits", {}))
        self.pidns = confine.own_pid_namespace() if hello.get("pidns") else None
        """This process's own PID namespace, to come back to after forking a trial into a new one."""
        self.direct = self.pidns is not None and not hello.get("keeper")
        """Each trial's process is PID 1 of its namespace, with no keeper: castbench reads how it
        ended (`worker._end_directly`). A keeper (`_keeper`) where there is no namespace, or when
        castbench asks for one (`bench/trial_isolation.py` compares the two)."""
        _PIDNS_TRIALS[0] = self.direct
        self.forked = 0
        # where the trials' processes find the agent, for looking its modules up: never on this
        # process's own path, so no module of the agent's folder is ever imported here (a later
        # lazy import of castbench's own would otherwise find a shadowing copy there first)
        os.environ[AGENT_PATH_ENV] = os.pathsep.join(hello["sys_path"])
        self.compiled = Precompiled.for_agent(hello["target"], hello["role"], hello["domain_packages"])
        """The sandbox's rules made ready once (paths opened, rules packed): a trial's process
        only hands them to the kernel."""
        importlib.import_module("castbench.agents")  # castbench's public API for agents, imported
        # once here rather than by every trial's import of its agent (castbench's code, not the agent's)
        gc.freeze()  # what the template holds stays shared with its trials' processes (no copy)

    def run(self) -> None:
        answer = self._probe()
        self.control.send_bytes(encode(answer))
        if "error" in answer:
            return
        try:
            self._fork()  # the first trial's process, ready before it is asked for
            while True:
                message = self._wait(self.control)
                if message is None:
                    return  # castbench closed the pipe or exited
                if message["op"] == "trial":
                    self._hand_over()
                elif message["op"] == "end":
                    keeper, scratch = self._signal_end()
                    self.control.send_bytes(encode({}))  # castbench reads the keeper's report
                    _await_keeper(keeper)
                    _discard(scratch)
                    with suppress(OSError):  # castbench removed the folder: it is shutting down
                        self._fork()  # the next trial's, while castbench finishes this one
        finally:
            _discard(self._end()[1])

    def _hand_over(self) -> None:
        """Give castbench the socket of the trial's process (forked ahead, or now)."""
        if self.trial is None or self.trial.socket is None:  # none ready (or one castbench holds)
            _discard(self._end()[1])
            self._fork()
        assert self.trial is not None and self.trial.socket is not None
        self.control.send_bytes(encode({"started": self.trial.pid, "keeper": not self.direct}))
        fds = [self.trial.socket.fileno(), self.trial.output, self.trial.report]
        socket.send_fds(self.control_socket, [b"T"], fds)
        self.trial.socket.close()
        self.trial.socket = None
        os.close(self.trial.output)  # castbench reads them, never this process
        os.close(self.trial.report)
        self.trial.output = self.trial.report = -1

    def _wait(self, connection: Connection, limit: float | None = None) -> dict[str, Any] | None:
        """The next message on `connection`, taking the trial's output meanwhile; None when it
        closed, castbench's process is gone or `limit` seconds passed."""
        deadline = None if limit is None else time.monotonic() + limit
        with selectors.DefaultSelector() as selector:
            selector.register(connection.fileno(), selectors.EVENT_READ, "message")
            while True:
                if os.getppid() != self.parent:
                    return None
                if deadline is not None and time.monotonic() > deadline:
                    return None
                for _ in selector.select(1.0):
                    try:
                        return decode(connection.recv_bytes())
                    except (EOFError, OSError, ValueError):
                        return None

    def _fork(self) -> None:
        """Start a trial's process: it enters its sandbox and imports the agent, then waits for
        castbench on its socket (`_Trial.socket`, castbench's end, until handed over)."""
        scratch = tempfile.mkdtemp(prefix="trial-", dir=self.folder)
        write_end = _output_file()
        ours, theirs = socket.socketpair()
        report_read, report_write = os.pipe()
        go_read, go_write = os.pipe()
        for fd in (report_read, report_write, go_read, go_write):
            os.set_inheritable(fd, False)
        sys.stdout.flush()
        sys.stderr.flush()
        if self.pidns is not None:
            confine.unshare_pid()  # the keeper is PID 1 of a namespace of its own
        try:
            pid = os.fork()
        finally:
            if self.pidns is not None and os.getpid() == self.pid:
                confine.restore_pid(self.pidns)
        if pid == 0:
            try:
                os.close(report_read)
                os.close(go_write)
                if self.direct:  # PID 1 of its namespace: castbench reads how it ended
                    _trial_process(self, theirs.fileno(), write_end, scratch, 0)
                else:
                    _keeper(self, theirs.fileno(), write_end, scratch, report_write, go_read)
            finally:
                os._exit(0)
        theirs.close()
        os.close(report_write)
        os.close(go_read)
        if self.direct:  # no keeper to tell: its pipe closed (castbench ends the trial)
            os.close(go_write)
            go_write = -1
        self.trial = _Trial(pid, write_end, scratch, ours, report_read, go_write)

    def _end(self) -> tuple[dict[str, Any], str]:
        """End the trial: kill and reap all its processes; what it wrote, and its scratch folder
        (for the caller to remove: after answering castbench)."""
        keeper, scratch = self._signal_end()
        _await_keeper(keeper)
        return {}, scratch

    def _signal_end(self) -> tuple[int, str]:
        """Tell the trial's keeper the trial is over (it kills, reaps and reports to castbench);
        its PID (0: none) and the trial's scratch folder."""
        trial, self.trial = self.trial, None
        if trial is None:
            return 0, ""
        if trial.socket is not None:
            trial.socket.close()
        for fd in (trial.output, trial.report):  # never handed over: nobody reads them
            if fd >= 0:
                os.close(fd)
        if trial.go >= 0:
            with suppress(OSError):
                os.write(trial.go, b"e")
            os.close(trial.go)
        return trial.pid, trial.scratch

    def _probe(self) -> dict[str, Any]:
        """Import the agent once, in a trial's process, and say what it is (or why it cannot be
        used): what castbench checks before a run starts."""
        self._fork()
        assert self.trial is not None and self.trial.socket is not None
        connection = Connection(self.trial.socket.detach())
        self.trial.socket = None
        limit = float(self.hello.get("start_s", STARTUP_S))
        try:
            entered = self._wait(connection, limit)
            if entered is None or "error" in entered:
                lost = "the agent's process exited entering its sandbox"
                return entered or {"error": lost, "kind": "fatal"}
            began = time.monotonic()
            loaded = self._wait(connection, limit)
            if loaded is None and time.monotonic() - began >= limit:
                overran = import_overran(self.hello["role"], self.hello["target"], limit)
                return {"error": overran, "kind": "spec"}
            return loaded or {"error": "the agent's process exited while importing it", "kind": "spec"}
        finally:
            connection.close()
            _discard(self._end()[1])


_P_ALL, _P_PID = 0, 1
_WEXITED, _WNOHANG, _WNOWAIT = 4, 1, 0x01000000


def _reap_unread(pid: int) -> None:
    """Reap child `pid` (0: any child) without learning anything of it: `waitid` with no
    `siginfo` to fill, so its exit status never enters this process's memory."""
    _libc.waitid(_P_PID if pid else _P_ALL, pid, None, _WEXITED)


def _has_children() -> bool:
    """Whether this process has a child, exited or not (nothing of it read)."""
    return bool(_libc.waitid(_P_ALL, 0, None, _WEXITED | _WNOHANG | _WNOWAIT) == 0)


def _await_keeper(keeper: int) -> None:
    """End the trial's first process, the template's only child of the trial: its keeper (which
    kills, reaps and reports) or, in a PID namespace, the trial's process itself, PID 1 there
    (castbench has read its end and killed it; killed here if castbench is gone), whose death
    ends every process of its namespace. Reaped unread, then anything a lost one left here."""
    if keeper:
        if _PIDNS_TRIALS[0]:
            with suppress(ProcessLookupError):
                os.kill(keeper, signal.SIGKILL)
        _reap_unread(keeper)
    _forget_children()


_PIDNS_TRIALS = [False]
"""The template forks each trial's process into a PID namespace of its own, with no keeper."""


def _forget_children() -> None:
    """Kill and reap what a lost trial left here, learning nothing of it: the template forks the
    next trial, so it must never hold what a trial could put in it (an exit code, a CPU time, a
    count of processes), however small."""
    while True:
        children = _children()
        if not children:
            if not _has_children():
                return
            time.sleep(0.0005)  # one is exiting and not yet listed
            continue
        for pid in children:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _reap_unread(pid)


def _keeper(template: _Template, fd: int, output: int, scratch: str, report: int, go: int) -> None:
    """A trial's keeper: castbench's code, forked from the template for this trial alone (PID 1 of
    the trial's namespace where there is one). It forks the agent's process, waits for the
    template's word that the trial is over, kills and reaps everything the trial started and
    writes how it ended into `report`, which castbench reads. So what a trial leaves (its exit
    code, its CPU time, the processes it left) reaches castbench and dies with the keeper: the
    template, which forks every later trial, never learns it."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != template.pid and template.pidns is None:
        return
    if template.pidns is None:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # what the trial's processes leave comes back here
    keeper = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            _trial_process(template, fd, output, scratch, keeper)
        finally:
            with suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(0)
    os.close(fd)
    os.close(output)
    first_host = next(iter(_children_of(confine.host_pid())), 0)  # its only child yet
    with suppress(OSError):
        os.read(go, 1)  # the trial is over (or the template is gone: end of file)
    if template.pidns is not None:
        stray, ended = _reap_namespace(pid, first_host, template.limits.cpu)
    else:
        stray, ended = _reap_everything(pid, template.limits.cpu)
    with suppress(OSError):
        os.write(report, encode({"stray": stray, "ended": ended}))


def _reap_namespace(first: int, first_host: int, cpu_limit: int) -> tuple[int, str]:
    """As `_reap_everything`, for the keeper of a PID namespace (its PID 1): every process in it
    is killed at once (`kill(-1)`), and reaped. `first`: the agent's process, as the namespace
    and as the machine's `/proc` number it."""
    ended, cpu = "", 0.0
    with suppress(ChildProcessError):
        pid, status, usage = os.wait4(first, os.WNOHANG)
        if pid:
            ended, cpu = _status(status), usage.ru_utime + usage.ru_stime
    stray = len([pid for pid in _descendants(confine.host_pid()) if pid != first_host])
    with suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)  # all of the namespace but its PID 1
    while True:
        try:
            pid, status, usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        if pid == first:
            cpu = max(cpu, usage.ru_utime + usage.ru_stime)
            if not ended and not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
                ended = _status(status)
    said = ended or "killed at the trial's end"
    if cpu_limit and cpu >= cpu_limit:
        said = f"{said}: CPU time limit of {cpu_limit} s passed"
    return max(0, stray), said


def _trial_process(template: _Template, fd: int, output: int, scratch: str, keeper: int) -> None:
    """In a trial's fresh process (forked from the template): its own process group, its output
    into the trial's pipe, no descriptor of the template's, its environment and scratch folder,
    the sandbox; then the agent, imported here and serving this one trial. The first message says
    whether the sandbox was entered (castbench's own code, before any of the agent's ran)."""
    os.setpgid(0, 0)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # the template is single-threaded: its death ends us
    if os.getppid() != keeper:
        return  # its keeper is gone
    sys.argv[:] = [sys.argv[0]]  # castbench's PID and the control descriptor: not the agent's
    hello, plan = template.hello, template.plan
    os.dup2(output, 1)
    os.dup2(output, 2)
    _close_all_but({fd, output, *(plan.descriptors if plan is not None else ())})
    os.close(output)
    connection = Connection(fd)
    tempfile.tempdir = None
    os.environ["TMPDIR"] = scratch
    refused = None
    try:
        confine.apply_limits(template.limits)
        if hello.get("user"):
            confine.become_trial_user(confine.host_pid())
    except OSError as exc:
        refused = {"error": f"the trial's process could not be confined: {exc}", "kind": "fatal"}
    if plan is not None and refused is None:
        source = dict(os.environ)  # the template's: the sandbox's environment already
        os.environ.clear()
        os.environ.update(sandbox.environment(plan.plan.env, scratch, source))
        try:
            sandbox.enter(plan, scratch)
        except sandbox.SandboxError as exc:
            refused = {"error": f"{exc} (CASTBENCH_SANDBOX=off runs agents unsandboxed)", "kind": "fatal"}
    else:
        os.chdir(scratch)
    connection.send_bytes(encode(refused or {"entered": True}))
    if refused is not None:
        return
    factory, answer = _load(hello, template.compiled)
    connection.send_bytes(encode(answer))
    if factory is None:
        return
    host = _Host(factory, connection, hello["role"], hello["target"])
    while True:
        try:
            message = decode(connection.recv_bytes())
        except (EOFError, OSError):
            return  # castbench closed the pipe or exited
        try:
            data = encode(host.handle(message))
        except Exception as exc:
            data = encode(_failure(hello["role"], exc))
        connection.send_bytes(data)
        if message.get("op") == "close":
            while not keeper:  # PID 1 of its namespace: its exit would end what it left running
                time.sleep(3600)  # before castbench counted it; castbench kills it
            return


def _close_all_but(kept: set[int]) -> None:
    """Close every descriptor above standard error but `kept`: one call per gap between them
    (the prepared sandbox's descriptors lie in a row)."""
    low = 3
    for fd in sorted(kept):
        if fd > low:
            os.closerange(low, fd)
        low = max(low, fd + 1)
    os.closerange(low, 1 << 20)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = int(sys.argv[2]) if len(sys.argv) > 2 else os.getppid()
    connection = Connection(int(sys.argv[1]))
    while not connection.poll(1.0):
        if os.getppid() != parent:
            return
    hello = decode(connection.recv_bytes())
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # what a trial's processes leave comes back here
    _Template(hello, connection, parent).run()


if __name__ == "__main__":
    main()
