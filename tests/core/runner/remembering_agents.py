"""Policies that try to carry something from one trial to the next, loaded by import path as a
team's own would be: each keeps a memory by one route (`via`) and counts the earlier trials of
the same task it remembers. They fail a task they have not seen and pass one they remember (on
tasks where doing nothing passes), so any memory that survives a trial shows as pass^k above the
memory-less twin's (`via=none`), which fails every trial.

Routes: module state; a file in the working (scratch) folder, in HOME or in the temporary folder;
a thread started at import that holds the memory; a shared memory mapping made at import that
`os.register_at_fork` hooks re-attach (what a template forked after the agent's import would
share with every trial); a daemon (double fork, `setsid`) that holds the memory and answers on a
loopback UDP port; and an `InfrastructureError` (or fatal) raised to get a failed trial re-rolled.
"""

from __future__ import annotations

import json
import mmap
import os
import queue
import socket
import sys
import tempfile
import threading
import time

from castbench._agents.views import Briefing, PolicyView
from castbench._base.conversation import Action, ReplyAction, UserTurn
from castbench._base.dialogue import ANYTHING_ELSE
from castbench._base.errors import FatalInfrastructureError, InfrastructureError

__all__ = ["DaemonPolicy", "LoudPolicy", "RememberingPolicy", "ReportingPolicy", "RerollingPolicy"]

_MODULE: dict[str, int] = {}

_SHARED = mmap.mmap(-1, 1 << 16)  # MAP_SHARED: a forked child writes what its parent reads
"""Made at import: every process forked after the import shares it."""
_AT_FORK: list[int] = []
os.register_at_fork(after_in_child=lambda: _AT_FORK.append(os.getpid()))

_REQUESTS: queue.Queue[tuple[str, queue.Queue[int]]] = queue.Queue()


def _hold() -> None:
    """The thread started at import: it holds the memory and answers counts."""
    held: dict[str, int] = {}
    while True:
        key, reply = _REQUESTS.get()
        reply.put(held.get(key, 0))
        held[key] = held.get(key, 0) + 1


threading.Thread(target=_hold, name="memory", daemon=True).start()


def _file_memory(path: str, key: str) -> int:
    try:
        with open(path) as handle:
            held = json.load(handle)
    except (OSError, ValueError):
        held = {}
    seen = int(held.get(key, 0))
    held[key] = seen + 1
    try:
        with open(path, "w") as handle:
            json.dump(held, handle)
    except OSError:
        pass
    return seen


def _mapped_memory(key: str) -> int:
    raw = bytes(_SHARED[:]).split(b"\0", 1)[0]
    held = json.loads(raw) if raw else {}
    seen = int(held.get(key, 0))
    held[key] = seen + 1
    data = json.dumps(held).encode() + b"\0"
    _SHARED[: len(data)] = data
    return seen


def _daemon(port: int) -> None:
    """Double fork and `setsid`: a process of the agent's that no longer has it as its parent,
    holding the memory and answering on a loopback UDP port."""
    if os.fork() != 0:
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    held: dict[str, int] = {}
    try:
        server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        server.bind(("127.0.0.1", port))
        while True:
            data, peer = server.recvfrom(65536)
            key = data.decode()
            server.sendto(str(held.get(key, 0)).encode(), peer)
            held[key] = held.get(key, 0) + 1
    finally:
        os._exit(0)


def _daemon_memory(key: str, port: int) -> int:
    for attempt in range(2):
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
                client.settimeout(0.5)
                client.sendto(key.encode(), ("127.0.0.1", port))
                return int(client.recvfrom(64)[0])
        except OSError:
            if attempt == 0:
                _daemon(port)
                time.sleep(0.2)
    return 0


def remembered(via: str, key: str, port: int = 0) -> int:
    """How many earlier trials of `key` this route remembers (and remember this one)."""
    if via == "module":
        seen = _MODULE.get(key, 0)
        _MODULE[key] = seen + 1
        return seen
    if via == "scratch":
        return _file_memory(os.path.join(os.getcwd(), "memory.json"), key)
    if via == "home":
        return _file_memory(os.path.join(os.path.expanduser("~"), ".memory.json"), key)
    if via == "tmp":
        return _file_memory(os.path.join(tempfile.gettempdir(), "castbench-memory.json"), key)
    if via == "thread":
        reply: queue.Queue[int] = queue.Queue()
        _REQUESTS.put((key, reply))
        return reply.get(timeout=5)
    if via == "atfork":
        return _mapped_memory(key)
    if via == "daemon":
        return _daemon_memory(key, port)
    return 0


def _opening(view: PolicyView) -> str:
    return next((event.text for event in view.conversation if isinstance(event, UserTurn)), "")


class RememberingPolicy:
    """Fails a task it does not remember (it raises, naming the task's opening: a run whose first
    trials all fail for one reason stops as a broken agent), passes one it does (it does nothing,
    on a task where that passes)."""

    def __init__(self, briefing: Briefing, via: str = "none", port: int = 0) -> None:
        self.via, self.port = via, port
        self.seen: int | None = None

    def propose(self, view: PolicyView) -> Action:
        if self.seen is None:
            self.seen = remembered(self.via, _opening(view), self.port)
        if not self.seen:
            raise RuntimeError(f"first time I see the task that opens {_opening(view)!r}")
        return ReplyAction(text=ANYTHING_ELSE)


class RerollingPolicy:
    """Fails the first try of a trial by raising castbench's infrastructure error (so castbench
    would try it again) and passes a retry: module state counts the tries of each task, which
    only persist where the trials share its process."""

    def __init__(self, briefing: Briefing, fatal: bool = False) -> None:
        self.fatal = fatal

    def propose(self, view: PolicyView) -> Action:
        key = f"tries {_opening(view)} {view.briefing.trial_index}"
        tries = _MODULE[key] = _MODULE.get(key, 0) + 1
        if tries == 1:
            error = FatalInfrastructureError if self.fatal else InfrastructureError
            raise error(f"the model server is down (for {_opening(view)!r})")  # one reason per task:
            # a run whose first trials all fail for one reason stops as a broken agent
        return ReplyAction(text=ANYTHING_ELSE)


class ReportingPolicy:
    """Says what it remembers of earlier trials of this task by every route in `via` (a comma
    list), then lets the user go: `remembered module=0 scratch=0 ...`."""

    def __init__(self, briefing: Briefing, via: str = "module", port: int = 0) -> None:
        self.routes, self.port = via.split(","), port

    def propose(self, view: PolicyView) -> Action:
        counts = " ".join(f"{route}={remembered(route, _opening(view), self.port)}" for route in self.routes)
        return ReplyAction(text=f"remembered {counts}. {ANYTHING_ELSE}")


class DaemonPolicy:
    """Leaves a daemon behind (double fork and `setsid`, so it is no longer its child) and says
    its process id."""

    def __init__(self, briefing: Briefing) -> None:
        pass

    def propose(self, view: PolicyView) -> Action:
        read_end, write_end = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                try:  # its PID as the machine names it (in the trial's PID namespace it has another)
                    pid = os.readlink("/proc/self")
                except OSError:
                    pid = str(os.getpid())
                os.write(write_end, pid.encode())
                while True:
                    time.sleep(60)
            os._exit(0)
        os.close(write_end)
        pid = int(os.read(read_end, 32))
        return ReplyAction(text=f"daemon {pid}. {ANYTHING_ELSE}")


class LoudPolicy:
    """Writes `size` bytes to stdout and a line to stderr at each step."""

    def __init__(self, briefing: Briefing, size: int = 1 << 20) -> None:
        self.size = size

    def propose(self, view: PolicyView) -> Action:
        print("x" * self.size, flush=True)
        print("loud policy on stderr", file=sys.stderr, flush=True)
        return ReplyAction(text=ANYTHING_ELSE)
