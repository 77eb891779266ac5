"""The operating system's wall around import-path agents: what a worker process may read, write,
connect to and inherit, enforced by the kernel (Landlock) before the agent's code is imported.

Why an OS sandbox: a Python import guard is a convention the agent's own code can remove, and a
worker process that may read anything its user can read finds the domain's task files, the τ
packages, the results store, the repository's exports and, through `/proc/<ppid>`, castbench's
command line, environment (API keys), descriptors and memory. Everything runs as root on CI, so
file permissions hide nothing.

Why Landlock (measured on this project's machines, Linux 6.18, Landlock ABI 7):
- it is unprivileged, needs no package (three system calls through `ctypes`) and no helper
  process: the worker restricts itself after reading its first message and before importing the
  agent, which costs a few milliseconds per worker start and nothing per step (the kernel checks
  opens and connects, not the pipe the steps travel on);
- it binds root too (no capability lifts it) and everything the agent starts inherits it;
- rules are path hierarchies, allow-only: anything not granted is denied, so a results store or
  an export folder nobody thought of is out of reach by default;
- ABI >= 4 filters TCP `bind`/`connect` by port; ABI >= 6 scopes signals and abstract unix
  sockets to the sandbox (the agent cannot kill castbench or reach its abstract sockets);
- its ptrace rule keeps `/proc/<ppid>/mem` closed even where `/proc` is readable, but not
  `/proc/<ppid>/environ`, `cmdline` or `fd` (measured): so `/proc` is not granted, only the
  worker's own `/proc/<pid>`.
Alternatives: bubblewrap is not installed (an apt package CI would have to add) and costs a
helper process and namespace set-up per worker; `unshare` namespaces work as root but hide
nothing on their own (a mount namespace still needs a tree built for it), and Landlock's
allow-list already says what the worker may see.

The policy (`plan`, worked out in castbench's process, which imports no agent code to do it):
- read-only: the system (`/usr`, `/lib`, `/lib64`, `/bin`, `/etc`), Python's prefixes (the
  interpreter, its standard library, the environment's site-packages), castbench's harness
  package and the agent's own package with the modules beside it that its code imports (found
  with `importlib.util.find_spec` and `castbench._agents.code`, which run none of its code),
  `/dev/null`, `/dev/urandom`, and the worker's own `/proc/<pid>`;
- names only (a directory listing, no contents): the folder holding the agent's package, so
  Python's import system can find it there;
- read and write: a fresh scratch folder per worker, its working directory, `HOME` and `TMPDIR`;
- never, even inside a granted folder (carved out: the folder's listing and every other child
  stay readable): the installed domain packages (entry point group `castbench.domains`), the
  packages they read their data from (group `castbench.protected`), every file castbench has
  open and the folder of each SQLite store among them, paths it was told of (`keep_out`), and
  castbench's repository checkout when installed editable (bar the harness package and what
  castbench's own needs place inside it, like a `.venv`);
- TCP: no `connect` or `bind` except the ports the agent declares;
- environment: `PATH`, `LANG`, `LC_*`, `TZ`, `PYTHONHASHSEED`, `HOME`/`TMPDIR` (the scratch)
  and the variables the agent declares.

What an agent declares (class attributes, read when its worker first imports it under the
strictest policy, recorded on its `AgentSpec`; see `SandboxNeeds`): `sandbox_env`,
`sandbox_connect`, `sandbox_read`. What it does not cover (docs/sandbox.md): UDP, pathname unix
sockets, other processes of the same user outside castbench's, careful forgeries of exports,
and systems without Landlock, where workers run unsandboxed and runs say so.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import shutil
import stat
import struct
import sys
import sysconfig
import tempfile
import threading
import zlib
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib.machinery import ModuleSpec
from importlib.metadata import entry_points
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from castbench._agents import confine, seccomp
from castbench._agents.code import agent_code
from castbench._agents.needs import SandboxNeeds, declared_needs
from castbench._agents.open_files import SQLITE_HEADER, open_files
from castbench._agents.paths import AGENT_PATH_ENV, find_top
from castbench._base.places import recorded_places, recorded_ports, state_dir

__all__ = [
    "SWITCH",
    "AgentPackageError",
    "Plan",
    "Prepared",
    "SandboxError",
    "SandboxNeeds",
    "SandboxSupport",
    "declared_needs",
    "enter",
    "environment",
    "keep_out",
    "plan",
    "protected_packages",
    "results_inside",
    "is_results_file",
    "remove_scratch",
    "support",
]

SWITCH = "CASTBENCH_SANDBOX"
"""`CASTBENCH_SANDBOX=off`: the operator runs import-path workers without the sandbox."""

MINIMUM_ABI = 4
"""Landlock ABI 4 (Linux 6.7) is the first that filters TCP: below it, the network is open."""

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS = 38

# filesystem rights (include/uapi/linux/landlock.h)
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
TRUNCATE = 1 << 14
READ = EXECUTE | READ_FILE | READ_DIR
LIST = READ_DIR
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | (1 << 15)
"""The rights a rule on a file (not a folder) may carry."""
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1


def _fs_rights(abi: int) -> int:
    """Every filesystem right the ABI knows (all are handled: what is not granted is denied)."""
    if abi >= 5:
        return (1 << 16) - 1  # + IOCTL_DEV
    if abi >= 3:
        return (1 << 15) - 1  # + TRUNCATE
    if abi == 2:
        return (1 << 14) - 1  # + REFER
    return (1 << 13) - 1


class SandboxError(RuntimeError):
    """The sandbox could not be set up (the worker must not run the agent unsandboxed)."""


class AgentPackageError(SandboxError, ValueError):
    """The agent's own package cannot be granted (it holds castbench results): the agent, as
    given, cannot run; a bad `--policy`/`--critic` value like any other."""


@dataclass(frozen=True)
class SandboxSupport:
    """Whether workers started now run sandboxed: `mechanism` (`landlock ABI 7`) when
    `available`, else `reason` says why not (`CASTBENCH_SANDBOX=off`, the kernel, the OS)."""

    available: bool
    mechanism: str = ""
    reason: str = ""
    abi: int = 0


_libc: Any = None


def _syscall(number: int, *args: Any) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def _ruleset_attr(abi: int) -> bytes:
    """`struct landlock_ruleset_attr` as this ABI reads it (fields it lacks left out)."""
    if abi >= 6:
        scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        return struct.pack("=QQQ", _fs_rights(abi), _NET_BIND_TCP | _NET_CONNECT_TCP, scoped)
    if abi >= 4:
        return struct.pack("=QQ", _fs_rights(abi), _NET_BIND_TCP | _NET_CONNECT_TCP)
    return struct.pack("=Q", _fs_rights(abi))


def _create_ruleset(abi: int) -> int:
    attr = _ruleset_attr(abi)
    buffer = ctypes.create_string_buffer(attr, len(attr))
    return _syscall(_CREATE_RULESET, buffer, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))


def _probe_support() -> SandboxSupport:
    if os.environ.get(SWITCH, "").strip().lower() in ("off", "0", "false", "no"):
        return SandboxSupport(False, reason=f"{SWITCH}=off was set by the operator")
    if not sys.platform.startswith("linux"):
        return SandboxSupport(False, reason=f"no sandbox on {sys.platform} (castbench uses Linux's Landlock)")
    try:
        abi = _syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError as exc:
        if exc.errno == errno.EOPNOTSUPP:
            return SandboxSupport(
                False, reason="Landlock is disabled in this kernel (boot with lsm=...,landlock)"
            )
        return SandboxSupport(False, reason=f"the kernel has no Landlock ({os.strerror(exc.errno or 0)})")
    if abi < MINIMUM_ABI:
        return SandboxSupport(
            False,
            reason=f"Landlock ABI {abi} cannot filter TCP (castbench needs ABI {MINIMUM_ABI}, Linux 6.7)",
        )
    try:
        os.close(_create_ruleset(abi))
    except OSError as exc:
        return SandboxSupport(False, reason=f"a Landlock ruleset could not be created ({exc.strerror})")
    if not seccomp.supported():
        return SandboxSupport(
            False, reason=f"castbench's socket filter has no numbers for {platform.machine()}"
        )
    mechanism = f"landlock ABI {abi} + {SOCKET_FILTER}"
    if confine.can_unshare_pid():
        mechanism += " + a PID namespace per trial"
    if os.geteuid() == 0:
        mechanism += " + a user per trial"
    return SandboxSupport(True, mechanism=mechanism, abi=abi)


TASKS_FILES_ENV = "CASTBENCH_TASKS_FILES"
"""Private splits' files (`castbench._domain.private`), several joined by the OS path separator."""

SOCKET_FILTER = "seccomp: TCP only"
"""How the mechanism names the socket filter (`castbench._agents.seccomp`): UDP, raw and unix
sockets refused unless declared (UDP)."""


@cache
def support() -> SandboxSupport:
    """What workers started by this process get (worked out once per process)."""
    return _probe_support()


# -- where the agent may not look ---------------------------------------------------------------

_KEPT_OUT: set[str] = set()
_KEPT_OUT_LOCK = threading.Lock()


def keep_out(path: str | os.PathLike[str]) -> None:
    """Never grant `path` to a worker started from now on, even inside a folder it may read (a
    results store, its folder, an export folder). Everything not granted is out of reach anyway:
    this matters when such a path lies inside one that is granted."""
    with _KEPT_OUT_LOCK:
        _KEPT_OUT.add(os.path.realpath(path))


def _open_stores() -> frozenset[str]:
    """What castbench's process has open that an agent must not read: every regular file (the
    results store and its journal among them), and the folder of each SQLite database (where
    its siblings, other stores and exports usually lie)."""
    files = open_files()
    return frozenset({file.path for file in files} | {os.path.dirname(f.path) for f in files if f.sqlite})


def _package_paths(name: str) -> list[str]:
    """Where the top-level module `name` lives (its folders, or its file), found without running
    any of its code; [] if it is not installed."""
    try:
        spec = find_spec(name)
    except (ImportError, ValueError):
        return []
    return _spec_paths(spec)


def _agent_paths(name: str) -> list[str]:
    """Where the agent's top-level module lies on its workers' path (every portion of a namespace
    package: each is checked for castbench's data before it is granted)."""
    return _spec_paths(find_top(name))


def _spec_paths(spec: ModuleSpec | None) -> list[str]:
    """A found module's folders (every portion of a namespace package), or its file."""
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [os.path.realpath(p) for p in spec.submodule_search_locations]
    if spec.origin and os.path.isabs(spec.origin):
        return [os.path.realpath(spec.origin)]
    return []


def _group_packages(*groups: str) -> set[str]:
    """The top-level packages of the entry points in `groups` (the installed distributions read once)."""
    found = entry_points()
    return {ep.module.partition(".")[0] for group in groups for ep in found.select(group=group)}


def protected_packages() -> list[str]:
    """Top-level packages no agent's worker may import or read: the installed domains
    (`castbench.domains`) and the packages they read their data from (`castbench.protected`)."""
    packages = _group_packages("castbench.domains", "castbench.protected")
    packages.discard("castbench")
    return sorted(packages)


def _harness() -> str:
    """castbench's own package folder."""
    return os.path.realpath(os.path.dirname(os.path.dirname(__file__)))


def _checkout() -> str | None:
    """castbench's repository, when castbench is installed editable from one (`harness/castbench`
    beside a `pyproject.toml`): its tests, exports and domains are not the agent's to read."""
    harness = Path(_harness())
    if harness.parent.name == "harness" and (harness.parent.parent / "pyproject.toml").is_file():
        return str(harness.parent.parent)
    return None


# -- the plan -----------------------------------------------------------------------------------


class Plan(BaseModel):
    """The rules one pool's workers apply to themselves: (path, rights) grants and TCP ports.
    Worked out in castbench's process, sent to the worker in its first message."""

    model_config = ConfigDict(frozen=True)

    abi: int
    grants: tuple[tuple[str, int], ...]
    connect: tuple[int, ...] = ()
    env: tuple[str, ...] = ()
    udp: bool = False
    """UDP sockets may be made (the agent declared a UDP port); else the seccomp filter refuses them."""
    kept_out: tuple[str, ...] = ()
    """What is out of reach even inside a granted folder (for reports and tests), bar the
    places on castbench's record (thousands, some day: they would cross at every worker start)."""
    refused_ports: tuple[int, ...] = ()
    """Declared TCP ports not granted: a results store's server listens there."""
    narrowed: tuple[str, ...] = ()
    """Declared reads not granted whole: folders too large to check for castbench results, or
    holding some (what they hold of those stays out, the rest is granted)."""


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class _PathSet:
    """Real paths, asked two things in time proportional to a path's depth, not to how many
    there are (the record of results places may hold thousands): whether a path lies at or
    under one of them, and whether one of them lies strictly below a path."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = frozenset(paths)
        self._above: set[str] = set()
        for path in self.paths:
            parent = os.path.dirname(path)
            while parent not in self._above and parent != path:
                self._above.add(parent)
                path, parent = parent, os.path.dirname(parent)

    def __contains__(self, path: object) -> bool:
        return path in self.paths

    def covers(self, path: str) -> bool:
        """`path` is one of them or lies below one."""
        while True:
            if path in self.paths:
                return True
            parent = os.path.dirname(path)
            if parent == path:
                return False
            path = parent

    def below(self, path: str) -> bool:
        """One of them lies strictly below `path`."""
        return path in self._above


class _Grants:
    def __init__(self, forbidden: set[str]) -> None:
        self.forbidden = _PathSet(forbidden)
        self.rights: dict[str, int] = {}

    def add(self, path: str, rights: int) -> None:
        self.rights[path] = self.rights.get(path, 0) | rights

    def grant(self, path: str, rights: int, beyond: _PathSet | None = None, below: bool = False) -> None:
        """Grant `rights` on `path` and below, bar the forbidden paths below it (listed folder
        by folder). `path` at or under a path in `beyond` is not granted at all; a forbidden
        `path` itself only when reached `below` a granted one (a store's folder that is also the
        agent's package stays the agent's to read, bar the store)."""
        real = os.path.realpath(path)
        if not os.path.exists(real) or (below and real in self.forbidden):
            return
        if beyond is not None and beyond.covers(real):
            return
        if not self.forbidden.below(real):
            self.add(real, rights if os.path.isdir(real) else rights & _FILE_RIGHTS)
            return
        self.add(real, rights & READ_DIR)
        try:
            children = os.listdir(real)
        except OSError:
            return
        for child in children:
            self.grant(os.path.join(real, child), rights, beyond, below=True)


_SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin")

_ETC = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ld.so.preload", "localtime", "timezone",
    "locale.alias", "locale.conf", "default/locale", "nsswitch.conf", "host.conf", "hosts", "gai.conf",
    "passwd", "group", "mime.types", "os-release", "lsb-release", "debian_version", "alternatives",
    "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki/tls/certs",
    "pki/ca-trust", "pki/tls/openssl.cnf", "python3", "fonts", "magic", "terminfo",
)  # fmt: skip
"""What Python, the C library, the locale, time zones and TLS read in `/etc`, granted file by file:
the rest (`shadow`, `ssh`, `ssl/private`, credentials an operator keeps there) stays unreadable."""

_DNS_ETC = ("resolv.conf",)
"""Granted only to an agent that declares UDP port 53 (without them it resolves `/etc/hosts` names)."""


def _system_paths() -> list[str]:
    paths = list(_SYSTEM)
    paths += [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    paths += [os.path.dirname(os.path.realpath(sys.executable))]
    for scheme_path in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.append(sysconfig.get_path(scheme_path))
    return paths


def _temporary_folders() -> set[str]:
    """Where runs keep their stores and exports for a while (tests' `tmp_path`, castbench's
    scratch folders, `mktemp -d` results): never reachable through a declared read."""
    folders = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm", "/run", "/var/run"}
    return {os.path.realpath(folder) for folder in folders if os.path.isdir(folder)}


_NOT_DECLARABLE = ("/proc", "/dev", "/etc")
"""Never granted by a declared read: castbench's process, devices, `/etc` (granted file by file)."""


def _configured() -> set[str]:
    """The paths castbench's own `CASTBENCH_*` settings name (`CASTBENCH_TAU2_DATA`, the folder
    `--pack-option tau2.data` gives the τ² packs; `CASTBENCH_DB`; the state folder): data and results, never
    an agent's, whatever its package is called."""
    found = set()
    for name, value in os.environ.items():
        if not name.startswith("CASTBENCH_") or name == AGENT_PATH_ENV:
            continue
        for part in value.split(os.pathsep):  # CASTBENCH_TASKS_FILES holds several
            part = part.strip()
            if os.path.isabs(part) and os.path.exists(part):
                found.add(os.path.realpath(part))
                if name == TASKS_FILES_ENV:  # the folder where a publisher keeps its splits
                    found.add(os.path.dirname(os.path.realpath(part)))
    return found


def _recorded() -> frozenset[str]:
    """Every store and export castbench recorded on this machine, with a SQLite store's journals,
    the state folder holding that record and the stores' digests, and castbench's configured paths."""
    return _with_journals(recorded_places(), frozenset(_configured() | {str(state_dir())}))


@lru_cache(maxsize=4)
def _with_journals(recorded: frozenset[str], configured: frozenset[str]) -> frozenset[str]:
    """(Cached: the record's set is the same object until the record changes, so a worker start
    pays neither this nor hashing thousands of paths again for the plan's cache.)"""
    places = set(configured)
    for path in recorded:
        places.add(path)
        places.update(path + suffix for suffix in ("-wal", "-shm", "-journal"))
    return frozenset(places)


def plan(target: str, needs: SandboxNeeds | None = None) -> Plan:
    """The rules for the workers of the agent `target` (`module:attribute`), as it declares
    `needs` (none: the strictest sandbox, under which the agent is first imported). Worked out
    again only when what it depends on changed (a store opened or recorded since, another
    `sys.path`). `AgentPackageError` when the agent's own package holds castbench results."""
    with _KEPT_OUT_LOCK:
        kept_out = frozenset(_KEPT_OUT) | _open_stores()
    needs = needs or SandboxNeeds()
    return _plan(target, needs, kept_out, _recorded(), recorded_ports(), tuple(sys.path))


@lru_cache(maxsize=64)
def _plan(
    target: str,
    needs: SandboxNeeds,
    kept_out: frozenset[str],
    recorded: frozenset[str],
    store_ports: frozenset[int],
    sys_path: tuple[str, ...],
) -> Plan:
    abi = support().abi
    packages = {path for name in protected_packages() for path in _package_paths(name)}
    protected = _PathSet(packages)
    checkout = _checkout()
    stores = kept_out | ({checkout} if checkout else set())
    grants = _Grants(packages | stores | recorded)
    for path in [*_system_paths(), _harness()]:
        grants.grant(path, READ, beyond=protected)
    for name in (*_ETC, *(_DNS_ETC if 53 in needs.udp else ())):
        grants.grant(os.path.join("/etc", name), READ, beyond=protected)
    grants.add("/etc", LIST)
    agent = _agent_paths(target.partition(":")[0].partition(".")[0])
    agent += [os.path.realpath(unit) for unit in agent_code(target.partition(":")[0], "agent").units[1:]]
    for path in agent:  # its package, and the modules beside it that its code imports
        _refuse_results_inside(path, target)
        grants.grant(path, READ, beyond=protected)
        folder = os.path.dirname(path)  # its listing (names only), even in a folder kept out
        if not any(_under(folder, package) for package in packages):
            grants.add(folder, LIST)
    declared = _Declared(packages | stores | recorded | _temporary_folders() | set(_NOT_DECLARABLE))
    for path in needs.read:
        declared.grant(os.path.realpath(path))
    for path, rights in declared.rights.items():
        grants.add(path, rights)
    grants.add("/dev/null", READ_FILE | WRITE_FILE | TRUNCATE)
    for device in ("/dev/urandom", "/dev/random", "/dev/zero"):
        grants.add(device, READ_FILE)
    return Plan(
        abi=abi,
        grants=_without_repeats(grants.rights),
        connect=tuple(port for port in needs.connect if port not in store_ports),
        env=needs.env,
        udp=bool(needs.udp),
        kept_out=tuple(sorted(packages | stores)),
        refused_ports=tuple(port for port in needs.connect if port in store_ports),
        narrowed=tuple(sorted(declared.narrowed)),
    )


def _refuse_results_inside(path: str, target: str) -> None:
    """The agent's package folder (or a module of it) must hold no castbench results: the folder
    is granted whole, so a package that is an exports folder (a namespace package called
    `results`) would read them. Checked by content, whatever the folder is called."""
    checkout = _checkout()  # castbench's own test suite (editable install) holds test tasks by design
    suite = os.path.join(checkout, "tests") if checkout else None
    found, _ = results_inside(path, SCAN_LIMIT, tasks=not (suite and _under(path, suite)))
    if found is None:
        raise AgentPackageError(
            f"the agent '{target}': its package {path} holds more than {SCAN_LIMIT} entries, too many "
            "to check for castbench results; give the agent a package of its own"
        )
    if found:
        raise AgentPackageError(
            f"the agent '{target}': its package {path} holds castbench results or task data ({found[0]}"
            f"{f' and {len(found) - 1} more' if len(found) > 1 else ''}); castbench does not grant "
            "it: move the agent's code to a folder of its own"
        )


SCAN_LIMIT = 20_000
"""The most entries castbench reads below one agent package or one declared read when it looks
for results there (a few milliseconds per thousand; the plan is worked out once per pool)."""


class _Declared:
    """The grants of declared reads: each folder whose every entry was checked and holds no
    castbench results is granted whole; one that holds some is listed (names only) and its other
    children granted; one too large to check, or forbidden, is not granted."""

    def __init__(self, forbidden: set[str]) -> None:
        self.forbidden = _PathSet(forbidden)
        self.rights: dict[str, int] = {}
        self.narrowed: set[str] = set()
        self.budget = SCAN_LIMIT

    def _blocked(self, path: str) -> bool:
        return self.forbidden.covers(path) or os.path.basename(path) == "results"

    def grant(self, path: str) -> None:
        if not os.path.exists(path) or self._blocked(path):
            self.narrowed.add(path)
            return
        if self._clean(path):
            self.rights[path] = READ if os.path.isdir(path) else READ & _FILE_RIGHTS
            return
        self.narrowed.add(path)
        self._partial(path)

    def _clean(self, path: str) -> bool:
        """Whether `path` and all below it were checked and hold no results (nothing forbidden
        inside). Spends the budget; a folder past it is not clean."""
        if self._blocked(path):
            return False
        if self.forbidden.below(path):
            return False
        if any(_under(path, system) for system in _SYSTEM) or _under(path, "/sys"):
            return True  # system files (granted already) and the kernel's own: no results there
        found, seen = results_inside(path, self.budget)
        self.budget = max(0, self.budget - seen)
        return found == []

    def _partial(self, folder: str) -> None:
        if not os.path.isdir(folder) or os.path.islink(folder) or self._blocked(folder):
            return
        self.rights[folder] = self.rights.get(folder, 0) | READ_DIR
        try:
            children = sorted(os.listdir(folder))
        except OSError:
            return
        for child in children:
            path = os.path.join(folder, child)
            if os.path.islink(path):
                continue  # Landlock checks where a link leads, not the link: nothing to grant
            if self._clean(path):
                self.rights[path] = READ if os.path.isdir(path) else READ & _FILE_RIGHTS
            elif self.budget > 0:
                self._partial(path)


def results_inside(path: str, limit: int, tasks: bool = True) -> tuple[list[str] | None, int]:
    """The castbench stores and exports at or below `path`, recognised by their content (a
    SQLite file holding castbench's `run` and `trial` tables, a gzip file of castbench's export
    format), whatever they are called (None when more than `limit` entries lie below), and how
    many entries were looked at."""
    found: list[str] = []
    seen = 0
    stack = [path]
    opened = _open_sqlite()
    while stack:
        current = stack.pop()
        seen += 1
        if seen > limit:
            return None, seen
        try:
            if os.path.islink(current):
                continue
            if os.path.isdir(current):
                with os.scandir(current) as entries:
                    stack.extend(entry.path for entry in entries)
            elif is_results_file(current, opened, tasks):
                found.append(current)
        except OSError:
            continue
    return found, seen


_GZIP = b"\x1f\x8b"


def is_results_file(path: str, opened: dict[tuple[int, int], bool] | None = None, tasks: bool = True) -> bool:
    """A castbench results store or export, or (`tasks`) task data: a file with the marks of
    tasks and their ground truth (a split's file, a private split, τ's task modules, compressed
    or not) or a copy of a file of the domain packages and their data packages, by its content,
    whatever it is called. Opens nothing castbench has open (`opened`: their identities, and
    whether each is a SQLite file): closing a descriptor of a live store would drop its SQLite
    locks (`castbench._agents.open_files`)."""
    opened = _open_sqlite() if opened is None else opened
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode) or status.st_size < 2:
            return False
        identity = (status.st_dev, status.st_ino)
        if identity in opened:
            return opened[identity]
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
            if head[:4] in _WAL_MAGIC:
                return True  # another database's write-ahead log: its pages, schema and rows
            if head.startswith(SQLITE_HEADER):
                schema = head + handle.read(_SCHEMA_BYTES)
                castbench = b"TABLE trial" in schema and b"TABLE run" in schema
                return castbench or b"CREATE TABLE" not in schema  # a schema it cannot see: kept out
            if head.startswith(_GZIP):
                handle.seek(0)
                text = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(handle.read(1 << 16), 1 << 16)
                compact = text.replace(b" ", b"")
                return b'"format":"castbench-run"' in compact or (tasks and _is_task_data(compact))
            if not tasks:
                return False
            handle.seek(0)
            if _is_task_data(handle.read(_TASK_BYTES).replace(b" ", b"")):
                return True
        return _is_protected_copy(path, status.st_size)
    except (OSError, zlib.error):
        return False


_TASK_BYTES = 1 << 16
"""How much of a file is read for the marks of task data."""

_TASK_MARKS = (
    (b'"format":"castbench-private-split',),  # a private split
    (b'"scenario":', b'"outcome":', b'"family":'),  # castbench's tasks (a split's file, a copy)
    (b'"expected_state":',),
    (b"user_id=", b"actions=[", b"instruction="),  # tau-bench tasks, as their packages write them
    (b'"user_id":', b'"actions":', b'"instruction":'),  # the same as JSON
)


def _is_task_data(compact: bytes) -> bool:
    """Marks of tasks with their ground truth in a file's first bytes (spaces removed)."""
    return any(all(mark in compact for mark in marks) for marks in _TASK_MARKS)


_COPY_MIN = 256
"""Files of the protected packages smaller than this are not looked for (an empty `__init__.py`,
a two-line module: copying them gives nothing away)."""


def _protected_sizes() -> dict[int, list[str]]:
    return _protected_sizes_for(os.environ.get(TASKS_FILES_ENV, ""))


@lru_cache(maxsize=8)
def _protected_sizes_for(tasks_files: str) -> dict[int, list[str]]:
    """The files of the domain packages, the packages they read data from and the private splits
    named in `CASTBENCH_TASKS_FILES`, by size: a file of the same size and content anywhere an
    agent would be granted is a copy of castbench's data (task files, pack data, ground truth)."""
    roots = {path for name in protected_packages() for path in _package_paths(name)}
    roots.update(
        part
        for part in os.environ.get(TASKS_FILES_ENV, "").split(os.pathsep)
        if part.strip() and os.path.isabs(part)
    )
    sizes: dict[int, list[str]] = {}
    for root in sorted(roots):
        for folder, dirs, files in os.walk(root) if os.path.isdir(root) else [("", [], [root])]:
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                path = os.path.join(folder, name)
                try:
                    size = os.stat(path).st_size
                except OSError:
                    continue
                if size >= _COPY_MIN:
                    sizes.setdefault(size, []).append(path)
    return sizes


@lru_cache(maxsize=4096)
def _digest(path: str, size: int, mtime: int) -> bytes:
    import hashlib

    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).digest()


def _is_protected_copy(path: str, size: int) -> bool:
    same = _protected_sizes().get(size)
    if not same:
        return False
    try:
        own = _digest(path, size, os.stat(path).st_mtime_ns)
    except OSError:
        return False
    for other in same:
        with suppress(OSError):
            if (
                os.path.realpath(other) != os.path.realpath(path)
                and _digest(other, size, os.stat(other).st_mtime_ns) == own
            ):
                return True
    return False


_SCHEMA_BYTES = 1 << 16
"""Where a SQLite file's schema (its first pages) lies: castbench's tables are named there. A
database whose schema is not there (still in its write-ahead log, or pushed further by a large
schema) counts as results: nothing shows it is not a store."""

_WAL_MAGIC = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")


def _open_sqlite() -> dict[tuple[int, int], bool]:
    """The files castbench's process has open, and whether each is a SQLite database."""
    return {file.identity: file.sqlite for file in open_files()}


def _without_repeats(rights: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """The grants, less those a grant on a folder above already covers: each path's folders
    looked up among those kept (time in a path's depth, not in how many are kept: a plan holds
    thousands, and comparing each with each was a tenth of a second of every worker's start)."""
    kept: dict[str, int] = {}
    for path, granted in sorted(rights.items()):
        above, covered = path, False
        while not covered:
            parent = os.path.dirname(above)
            if parent == above:
                break
            above = parent
            held = kept.get(above)
            covered = held is not None and granted & ~held == 0
        if not covered:
            kept[path] = granted
    return tuple(kept.items())


_KEPT_ENV = ("PATH", "LANG", "TZ", "PYTHONHASHSEED")


def environment(
    declared: Iterable[str], scratch_dir: str, source: dict[str, str] | None = None
) -> dict[str, str]:
    """A worker's environment: the few variables Python and the locale need, the scratch folder
    as HOME and TMPDIR, and the `declared` variables (as set in `source`, castbench's own)."""
    source = dict(os.environ if source is None else source)
    env = {name: value for name, value in source.items() if name in _KEPT_ENV or name.startswith("LC_")}
    env.update({name: source[name] for name in declared if name in source})
    env["HOME"] = env["TMPDIR"] = scratch_dir
    return env


def remove_scratch(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


# -- in the worker ------------------------------------------------------------------------------


class Prepared:
    """A plan made ready once, in the worker's template, for the sandbox each trial's process
    enters: every granted path opened (`O_PATH`) and each rule's attribute packed. A trial then
    only hands the kernel rules it already holds, instead of opening, packing and closing several
    hundred paths in every trial's process, most of a trial's start.

    The descriptors are inherited by every trial's process (a fork, not an exec) and closed by
    `enter` before the agent is imported. A path opened here is granted as it was when the
    worker started: one replaced since (removed and made again) stays out of reach, the safe
    direction (grants are fixed at a worker's start anyway). Paths that could not be held open
    (the descriptor limit) are opened in each trial's process, as before."""

    def __init__(self, sandbox_plan: Plan) -> None:
        self.plan = sandbox_plan
        rights_mask = _fs_rights(sandbox_plan.abi)
        self.rules: list[tuple[int, Any]] = []
        """(rule type, packed attribute) in the order the kernel is given them."""
        self.by_path: list[tuple[str, int]] = []
        """Grants opened per trial: their descriptor could not be held open here."""
        self.descriptors: list[int] = []
        room = _descriptor_room() - _SPARE_DESCRIPTORS
        for path, rights in sandbox_plan.grants:
            if self.by_path or len(self.descriptors) >= room:
                self.by_path.append((path, rights & rights_mask))
                continue
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # gone since the plan was made: nothing to grant
            except OSError:  # out of descriptors (or another refusal): per trial from here on
                self.by_path.append((path, rights & rights_mask))
                continue
            self.descriptors.append(fd)
            self.rules.append((_RULE_PATH_BENEATH, _buffer(struct.pack("=Qi", rights & rights_mask, fd))))
        for port in sandbox_plan.connect:
            self.rules.append((_RULE_NET_PORT, _buffer(struct.pack("=QQ", _NET_CONNECT_TCP, port))))

    def close(self) -> None:
        """Close the descriptors (one call when, as usual, they were opened in a row)."""
        held, self.descriptors = sorted(self.descriptors), []
        if held and held[-1] - held[0] == len(held) - 1:
            os.closerange(held[0], held[-1] + 1)
            return
        for fd in held:
            with suppress(OSError):
                os.close(fd)


_SPARE_DESCRIPTORS = 256
"""Descriptors a worker's template keeps free of prepared grants (trials' sockets and pipes,
the agent's own files after the sandbox closed the grants)."""


def _descriptor_room() -> int:
    """How many descriptors this process may hold, its soft limit raised to the hard one first
    (an unprivileged call)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        wanted = 1 << 16 if hard == resource.RLIM_INFINITY else hard
        with suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
    return soft


def _buffer(attr: bytes) -> Any:
    return ctypes.create_string_buffer(attr, len(attr))


def _add_rules(ruleset: int, rules: Iterable[tuple[int, Any]]) -> None:
    """`landlock_add_rule` for each packed rule: the C call with its arguments made once (a
    trial's start hands the kernel several hundred rules)."""
    call, number, flags = _libc.syscall, ctypes.c_long(_ADD_RULE), ctypes.c_uint32(0)
    handle = ctypes.c_int(ruleset)
    kinds = {kind: ctypes.c_int(kind) for kind in (_RULE_PATH_BENEATH, _RULE_NET_PORT)}
    for kind, attr in rules:
        if call(number, handle, kinds[kind], attr, flags) < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))


def _add_path_rule(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone since the plan was made: nothing to grant
    try:
        _add_rules(ruleset, [(_RULE_PATH_BENEATH, _buffer(struct.pack("=Qi", rights, fd)))])
    finally:
        os.close(fd)


def _host_pid() -> int:
    """This process's PID in `/proc`'s namespace (in a PID namespace of its own it is 1 to itself)."""
    try:
        return int(os.readlink("/proc/self"))
    except (OSError, ValueError):
        return os.getpid()


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def enter(sandbox_plan: Plan | Prepared, scratch_dir: str) -> None:
    """Restrict this process, for good, to `sandbox_plan` plus read-write `scratch_dir` and its
    own `/proc/<pid>`. Call it before any thread starts (Landlock binds the calling thread and
    what it starts later, not threads already running) and before the agent is imported. A
    `Prepared` plan's descriptors are closed here, entered or not. `SandboxError` if it cannot be
    done: the worker must not go on unsandboxed."""
    prepared = sandbox_plan if isinstance(sandbox_plan, Prepared) else Prepared(sandbox_plan)
    try:
        if _threads() != 1:
            raise SandboxError(f"the worker has {_threads()} threads before entering the sandbox (must be 1)")
        _restrict(prepared, scratch_dir)
    finally:
        prepared.close()
    os.chdir(scratch_dir)


def _restrict(prepared: Prepared, scratch_dir: str) -> None:
    abi = prepared.plan.abi
    try:
        ruleset = _create_ruleset(abi)
        try:
            _add_rules(ruleset, prepared.rules)
            for path, rights in prepared.by_path:
                _add_path_rule(ruleset, path, rights)
            _add_path_rule(ruleset, scratch_dir, _fs_rights(abi))
            _add_path_rule(ruleset, f"/proc/{_host_pid()}", READ)  # its own, as /proc names it
            if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
            _syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
            seccomp.install(_libc, prepared.plan.udp)
        finally:
            os.close(ruleset)
    except OSError as exc:
        raise SandboxError(f"Landlock refused the worker's sandbox: {exc}") from exc
