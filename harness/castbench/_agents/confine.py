"""What a trial's process is confined to besides the filesystem and network wall of
`castbench._agents.sandbox` (issue 56): its own PID namespace, a user id of its own and bounds on
memory, disk, processes and CPU time.

- **A PID namespace per trial.** The worker's template (castbench's code, never the agent's)
  calls `unshare(CLONE_NEWPID)` before it forks a trial's keeper and `setns` back to its own
  namespace after: the keeper (castbench's code) is PID 1 and the agent's process PID 2 of a
  namespace that holds only the processes the trial starts. castbench, the template, other
  trials and every other process of the machine have no PID there, so none can be named to
  `kill`, `prlimit`, `setpriority`, `sched_setaffinity`, `ptrace` or `pidfd_open`; everything in
  the namespace dies with its keeper. Needs `CAP_SYS_ADMIN` (castbench runs as root on this
  project's machines); without it trials share the template's namespace and the run says so
  (`support().mechanism` lacks `a PID namespace per trial`).
- **A user id per trial.** Root is exempt from `RLIMIT_NPROC` and may signal and limit any
  process, so a trial's process, forked as root, takes a user id of its own
  (`UID_BASE + its PID as the machine sees it`: no account of the machine, no two trials alike)
  and keeps only the capabilities to read and write files whatever their mode
  (`CAP_DAC_OVERRIDE`, `CAP_DAC_READ_SEARCH`: Landlock still says which). Without root it keeps
  the user it has.
- **Bounds** (`TrialLimits`, `CASTBENCH_TRIAL_LIMITS=memory=4G,file=1G,processes=256,cpu=600`):
  `RLIMIT_AS` (address space), `RLIMIT_FSIZE` (the largest file it may write: its scratch
  folder and its output), `RLIMIT_NPROC` (processes and threads of its user id), `RLIMIT_CPU`
  (seconds of CPU; `SIGXCPU`, then `SIGKILL` 5 s later). A trial that passes one fails as the
  agent's: a `MemoryError` or an `OSError` (EFBIG, EAGAIN) in its code, or its process killed
  (`signal 24 (CPU time limit)`).

Cost: the namespace and the user id are a few system calls in the template and the trial's
process (`bench/trust_boundary.py` prints them); nothing per step.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import struct
import sys
from contextlib import suppress
from dataclasses import dataclass
from functools import cache

__all__ = [
    "DEFAULT_LIMITS",
    "LIMITS_ENV",
    "PIDNS_SWITCH",
    "UID_BASE",
    "TrialLimits",
    "apply_limits",
    "become_trial_user",
    "can_unshare_pid",
    "limits_from_env",
    "signal_name",
]

LIMITS_ENV = "CASTBENCH_TRIAL_LIMITS"
PIDNS_SWITCH = "CASTBENCH_TRIAL_PIDNS"
"""`CASTBENCH_TRIAL_PIDNS=off`: trials share the template's PID namespace (recorded)."""
UID_BASE = 0x60000000
"""Trials' user ids: `UID_BASE` + the trial's PID (no machine account lies there)."""

_CLONE_NEWPID = 0x20000000
_PR_SET_KEEPCAPS = 8
_PR_SET_PDEATHSIG, _PR_GET_PDEATHSIG = 1, 2
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2
_CAP_SYS_ADMIN = 21
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class TrialLimits:
    """Per-trial bounds; 0: none."""

    memory: int = 4 << 30
    """Bytes of address space (`RLIMIT_AS`)."""
    file: int = 1 << 30
    """Bytes of the largest file written (`RLIMIT_FSIZE`)."""
    processes: int = 256
    """Processes and threads of the trial's user id (`RLIMIT_NPROC`; enforced with a user of its own)."""
    cpu: int = 600
    """Seconds of CPU time (`RLIMIT_CPU`)."""

    def summary(self) -> str:
        def size(value: int) -> str:
            return (
                "none"
                if not value
                else f"{value / (1 << 30):g} GiB"
                if value >= 1 << 30
                else f"{value >> 20} MiB"
            )

        processes = self.processes or "no limit"
        cpu = f"{self.cpu} s" if self.cpu else "none"
        return f"memory {size(self.memory)}, file {size(self.file)}, processes {processes}, cpu {cpu}"


DEFAULT_LIMITS = TrialLimits()

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _amount(name: str, text: str) -> int:
    text = text.strip().lower().removesuffix("b").removesuffix("i")
    if name == "cpu":
        text = text.removesuffix("s")
    unit = text[-1:] if text[-1:] in _UNITS and text[-1:] else ""
    number = text[: len(text) - len(unit)] if unit else text
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"{LIMITS_ENV}: '{text}' is not an amount for {name}") from None
    if value < 0:
        raise ValueError(f"{LIMITS_ENV}: {name} cannot be negative")
    return int(value * (_UNITS[unit] if name in ("memory", "file") else 1))


def limits_from_env(text: str | None = None) -> TrialLimits:
    """`memory=4G,file=1G,processes=256,cpu=600` (any of them; `0` or `none`: no bound).
    `ValueError` naming the item on a bad one."""
    text = os.environ.get(LIMITS_ENV, "") if text is None else text
    values: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        name = name.strip().lower()
        if not sep or name not in ("memory", "file", "processes", "cpu"):
            raise ValueError(f"{LIMITS_ENV}: '{item}' is not one of memory=, file=, processes=, cpu=")
        values[name] = 0 if value.strip().lower() in ("none", "off", "0") else _amount(name, value)
    return TrialLimits(**values)


def _capabilities() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


@cache
def can_unshare_pid() -> bool:
    """Whether templates started by this process can give each trial its own PID namespace."""
    if not sys.platform.startswith("linux"):
        return False
    if os.environ.get(PIDNS_SWITCH, "").strip().lower() in ("off", "0", "false", "no"):
        return False
    return bool(_capabilities() >> _CAP_SYS_ADMIN & 1)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def unshare_pid() -> None:
    """The next child this process forks is PID 1 of a new namespace (call `restore_pid` after)."""
    _check(_libc.unshare(_CLONE_NEWPID), "unshare(CLONE_NEWPID)")


def own_pid_namespace() -> int:
    """A descriptor of this process's PID namespace, to come back to with `restore_pid`."""
    return os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)


def restore_pid(descriptor: int) -> None:
    _check(_libc.setns(descriptor, _CLONE_NEWPID), "setns(CLONE_NEWPID)")


def host_pid() -> int:
    """This process's PID as `/proc` (the machine's namespace) names it."""
    try:
        return int(os.readlink("/proc/self"))
    except (OSError, ValueError):
        return os.getpid()


def become_trial_user(pid: int) -> int | None:
    """As root: take the user id `UID_BASE + pid` (and its group), keeping only the capabilities
    to read and write files whatever their mode. Returns the id taken (None: not root, kept).

    The signal the process gets when its parent dies (`PR_SET_PDEATHSIG`) is armed again after:
    the kernel clears it when the effective user id changes (prctl(2)), and a trial's process
    whose template dies would otherwise run on as an orphan until its CPU limit."""
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return None
    uid = UID_BASE + pid
    armed = ctypes.c_int(0)
    _check(_libc.prctl(_PR_GET_PDEATHSIG, ctypes.byref(armed), 0, 0, 0), "prctl(PR_GET_PDEATHSIG)")
    _check(_libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0), "prctl(PR_SET_KEEPCAPS)")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    kept = (1 << _CAP_DAC_OVERRIDE) | (1 << _CAP_DAC_READ_SEARCH)
    header = ctypes.create_string_buffer(struct.pack("=Ii", _LINUX_CAPABILITY_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(struct.pack("=6I", kept, kept, 0, 0, 0, 0), 24)
    _check(_libc.capset(header, data), "capset")
    with suppress(OSError):
        _check(_libc.prctl(_PR_SET_KEEPCAPS, 0, 0, 0, 0), "prctl(PR_SET_KEEPCAPS)")
    if armed.value:
        _check(_libc.prctl(_PR_SET_PDEATHSIG, armed.value, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    return uid


def apply_limits(limits: TrialLimits) -> None:
    """Lower this process's limits (for it and all it starts; none can raise them again)."""
    pairs = (
        (resource.RLIMIT_AS, limits.memory, 0),
        (resource.RLIMIT_FSIZE, limits.file, 0),
        (resource.RLIMIT_NPROC, limits.processes, 0),
        (resource.RLIMIT_CPU, limits.cpu, 5),
    )
    for kind, value, grace in pairs:
        if not value:
            continue
        _, hard = resource.getrlimit(kind)
        top = value + grace
        if hard != resource.RLIM_INFINITY:
            top = min(top, hard)
        resource.setrlimit(kind, (min(value, top), top))


_SIGNALS = {
    getattr(signal, "SIGXCPU", 24): "CPU time limit",
    getattr(signal, "SIGXFSZ", 25): "file size limit",
    signal.SIGKILL: "killed",
}


def signal_name(number: int) -> str:
    """`24 (CPU time limit)`: a trial's process's end, said with the limit that ended it."""
    named = _SIGNALS.get(number)
    return f"{number} ({named})" if named and number != signal.SIGKILL else str(number)
