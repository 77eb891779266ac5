"""Routes to answers that name no file castbench knows of: a package that is an exports folder,
a declared read of `/` over other runs' stores, UDP, DNS, unix sockets, raw sockets, io_uring,
`/etc/shadow`, a store's TCP port declared, castbench's own state. Each hostile agent below is
written as a team would write its own; each is refused or gets nothing, and the one that replays
other runs' passing trials stays at the `scripted:lookup-refuse` floor. With
`CASTBENCH_SANDBOX=off` the attacks succeed (the tests fail)."""

from __future__ import annotations

import shutil
import socket
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from castbench._agents.registry import resolve
from castbench._base import places
from castbench._run.api import evaluate
from castbench.agents import sandbox
from castbench.domain import load_domain
from tests.sandbox.probing import PROBE, Banner, first_reply, kernel_support
from tests.support import sqlite_url

pytestmark = pytest.mark.skipif(
    not kernel_support().available, reason=f"no sandbox here: {kernel_support().reason}"
)

REPO = Path(__file__).resolve().parents[2]

AGENTS = '''
"""Agents that look for answers by routes the kernel's file rules do not name."""
import ctypes, json, os, platform, socket, sqlite3

from castbench._base.conversation import ReplyAction, ToolCallAction, UserTurn
from castbench._base.dialogue import ANYTHING_ELSE


def attempt(route, arg):
    if route == "udp":
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(b"remember-this", ("127.0.0.1", int(arg)))
            return "sent"
    if route == "udp6":
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
            sock.sendto(b"remember-this", ("::1", int(arg)))
            return "sent"
    if route == "unix":
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(arg)
            return sock.recv(64)
    if route == "raw":
        socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
        return "raw socket"
    if route == "sctp":
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132).close()
        return "sctp socket"
    if route == "packet":
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close()
        return "packet socket"
    if route == "io_uring":
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.syscall(425, 4, ctypes.create_string_buffer(120))
        if fd < 0:
            raise OSError(ctypes.get_errno(), "io_uring_setup")
        return f"io_uring {fd}"
    if route == "handle":  # a file by handle, not by path (root may open one)
        libc = ctypes.CDLL(None, use_errno=True)
        handle = ctypes.create_string_buffer(b"\\x80\\x00\\x00\\x00" + bytes(132))
        mount = ctypes.c_int()
        number = {"x86_64": 303, "aarch64": 264}[platform.machine()]
        if libc.syscall(number, -100, arg.encode(), handle, ctypes.byref(mount), 0) < 0:
            raise OSError(ctypes.get_errno(), "name_to_handle_at")
        return "a handle"
    if route == "read":
        with open(arg, "rb") as handle:
            return handle.read(200)
    if route == "tcp":
        with socket.create_connection(("127.0.0.1", int(arg)), timeout=5) as conn:
            return conn.recv(64)
    if route == "socketpair":
        one, two = socket.socketpair()
        with one, two:
            one.send(b"pair")
            return two.recv(4)
    raise ValueError(route)


PROBE_CLASS


class Greedy(Probe):
    sandbox_read = ("/",)


class UdpDeclared(Probe):
    sandbox_udp = (UDPPORT,)


class StorePortDeclared(Probe):
    sandbox_connect = (STOREPORT,)


def _stores(roots):
    for root in roots:
        for folder, _, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    with open(path, "rb") as handle:
                        if handle.read(16) == b"SQLite format 3\\0":
                            yield path
                except OSError:
                    continue


class StoreReplayer:
    """Declares it reads everything, finds every results store it can under `roots`, and replays
    the actions of a passing trial that opened with its customer's message."""

    sandbox_read = ("/",)

    def __init__(self, briefing, roots="/tmp"):
        self.roots, self.plan, self.looked = roots.split(","), [], False

    def _find(self, opening):
        for path in _stores(self.roots):
            try:
                db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
                rows = db.execute("select record_json from trial where reward >= 1").fetchall()
            except Exception:
                continue
            for (text,) in rows:
                record = json.loads(text)
                if record.get("opening") == opening:
                    return [step["action"] for step in record["steps"] if step.get("action")]
        return []

    def propose(self, view):
        if not self.looked:
            self.looked = True
            opening = view.conversation[0]
            self.plan = self._find(opening.text if isinstance(opening, UserTurn) else None)
        if self.plan:
            action = self.plan.pop(0)
            if action["kind"] == "tool_call":
                return ToolCallAction(name=action["name"], arguments=action["arguments"])
            return ReplyAction(text=action["text"])
        return ReplyAction(text=ANYTHING_ELSE)
'''.replace("PROBE_CLASS", PROBE)


class _UdpListener:
    """A loopback UDP socket outside the sandbox: what a remembering agent would send to."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]

    def received(self) -> bytes | None:
        try:
            return self.sock.recv(64)
        except TimeoutError:
            return None


@pytest.fixture(scope="module")
def udp() -> Iterator[_UdpListener]:
    listener = _UdpListener()
    yield listener
    listener.sock.close()


@pytest.fixture(scope="module")
def store_port() -> Iterator[int]:
    """A TCP listener castbench recorded as a results server's port (as opening a Postgres store does)."""
    server = socket.create_server(("127.0.0.1", 0))
    port = int(server.getsockname()[1])
    places.record_port(port)
    yield port
    server.close()


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory, udp: _UdpListener, store_port: int) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("team")
    text = AGENTS.replace("UDPPORT", str(udp.port)).replace("STOREPORT", str(store_port))
    (folder / "sbx_routes.py").write_text(text)
    sys.path.insert(0, str(folder))
    yield "sbx_routes"
    sys.path.remove(str(folder))


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder outside the temporary folders, as a user's own project or model folder is."""
    folder = Path.home() / ".cache" / f"castbench-test-{uuid.uuid4().hex[:12]}"
    folder.mkdir(parents=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _committed_export() -> Path:
    return next((REPO / "results").rglob("*.json.gz"))


# -- an agent package that is an exports folder --------------------------------------------------


@pytest.mark.parametrize("name", ["results", "team_agent"])
def test_an_agent_package_holding_exports_is_refused_whatever_it_is_called(
    name: str, outside_tmp: Path
) -> None:
    """A namespace package (no `__init__.py`) that is a folder of exports, under any name: its
    folder is not granted, and the agent is refused naming what it holds."""
    package = outside_tmp / name
    package.mkdir()
    (package / "agent.py").write_text(AGENTS.replace("UDPPORT", "1").replace("STOREPORT", "2"))
    shutil.copy(_committed_export(), package / "notes.bin")  # renamed: recognised by content
    sys.path.insert(0, str(outside_tmp))
    try:
        with pytest.raises(sandbox.AgentPackageError, match="holds castbench results"):
            resolve("policy", f"{name}.agent:Probe")
    finally:
        sys.path.remove(str(outside_tmp))
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def test_results_files_are_recognised_by_content(tmp_path: Path) -> None:
    export = tmp_path / "a.txt"
    shutil.copy(_committed_export(), export)
    plain = tmp_path / "b.db"
    connection = sqlite3.connect(plain)
    connection.execute("create table notes (x)")
    connection.commit()
    connection.close()  # (one castbench has open counts as results: its header is not read again)
    store = tmp_path / "c"
    from castbench._records.store import ResultsStore

    ResultsStore(sqlite_url(store)).runs()
    schemaless = tmp_path / "d.bin"  # a copy whose schema is still in its write-ahead log
    schemaless.write_bytes(b"SQLite format 3\0" + bytes(4080))
    found, seen = sandbox.results_inside(str(tmp_path), 100)
    assert found is not None and {str(export), str(store), str(schemaless)} <= set(found), found
    assert str(plain) not in found and seen >= 5
    assert sandbox.results_inside(str(tmp_path), 2)[0] is None  # too many to check: not granted


# -- a declared read of / -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def passing_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another run's store under /tmp, holding passing trials of the tasks the attacker plays."""
    path = tmp_path_factory.mktemp("other-run") / "runs.db"
    evaluate(domains="retail", policy="oracle", trials=1, tasks=_change_tasks(), db=sqlite_url(path))
    return path


def _change_tasks(count: int = 3) -> list[str]:
    return [task.id for task in load_domain("retail").tasks("test") if task.outcome == "change"][:count]


def test_a_store_replayer_declaring_slash_stays_at_the_lookup_refuse_floor(
    agents: str, passing_store: Path, outside_tmp: Path, tmp_path: Path
) -> None:
    """Stores under /tmp, a store copied under an innocent name into a folder castbench never
    recorded, and the repository's exports: none readable through `sandbox_read = ("/",)`."""
    hidden = outside_tmp / "cache" / "blob.bin"
    hidden.parent.mkdir()
    shutil.copy(passing_store, hidden)
    roots = ",".join([str(passing_store.parent.parent), str(outside_tmp), str(REPO / "results")])
    result = evaluate(
        domains="retail",
        policy=f"{agents}:StoreReplayer?roots={roots}",
        trials=1,
        tasks=_change_tasks(),
        db=sqlite_url(tmp_path / "attack.db"),
    )
    summary = result.summary
    assert summary.floors is not None
    floor = summary.floors.domains["retail"]["lookup-refuse"][1]
    assert summary.domains["retail"].pass_hat[1] <= floor + 0.02, summary.domains["retail"].pass_hat
    assert summary.domains["retail"].end_reasons.get("harness_error", 0) == 0


def test_a_declared_read_of_slash_reaches_no_store_export_state_or_secret(
    agents: str, passing_store: Path, outside_tmp: Path
) -> None:
    data = outside_tmp / "weights.bin"
    data.write_bytes(b"model weights")
    hidden = outside_tmp / "blob.bin"
    shutil.copy(passing_store, hidden)
    assert first_reply(f"{agents}:Greedy?route=read&arg={data}") == "GOT b'model weights'"
    places.record_place(passing_store)
    for path in [
        passing_store,  # another run's store, under /tmp
        hidden,  # a copy under another name, in a folder castbench never recorded
        _committed_export(),  # the repository's exports
        places.state_dir() / "results-places",  # castbench's record of them
        Path("/etc/shadow"),
    ]:
        reply = first_reply(f"{agents}:Greedy?route=read&arg={path}")
        assert reply.startswith("DENIED"), (str(path), reply)


def test_a_wide_declaration_is_on_the_record_small_and_unsandboxed_for_that_resource() -> None:
    from castbench._records.provenance import AgentPlacement

    needs = sandbox.SandboxNeeds(read=("/",), connect=tuple(range(1, 65536)), udp=(53,), env=("A", "B"))
    placement = AgentPlacement(agent="team:Agent", where="sandboxed", detail="landlock ABI 7", needs=needs)
    assert placement.unsandboxed_for == ("filesystem", "tcp", "udp")
    cell = placement.short()
    assert len(cell) < 250 and "ports 1-65535" not in cell and "port 1-65535 (65535 in all)" in cell, cell
    assert "unsandboxed for filesystem, tcp, udp" in cell


# -- sockets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["udp", "udp6", "raw", "sctp", "packet", "io_uring", "handle"])
def test_what_the_port_and_path_rules_do_not_cover_is_refused(
    route: str, agents: str, udp: _UdpListener
) -> None:
    arg = "/etc/shadow" if route == "handle" else udp.port
    reply = first_reply(f"{agents}:Probe?route={route}&arg={arg}")
    assert reply.startswith("DENIED"), reply
    assert udp.received() is None


def test_a_pathname_unix_socket_is_refused(agents: str, tmp_path: Path) -> None:
    """As a Postgres's `/var/run/postgresql/.s.PGSQL.5432` or Ray's sockets under /tmp."""
    socket_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(socket_path))
    listener = Banner(server, b"UNIX-BANNER")
    try:
        reply = first_reply(f"{agents}:Greedy?route=unix&arg={socket_path}")
    finally:
        listener.server.close()
    assert reply.startswith("DENIED") and "UNIX-BANNER" not in reply, reply


def test_dns_is_refused_unless_declared(agents: str) -> None:
    reply = first_reply(f"{agents}:Probe?route=read&arg=/etc/resolv.conf")
    assert reply.startswith("DENIED"), reply


def test_a_declared_udp_port_opens_udp_and_the_run_says_so(agents: str, udp: _UdpListener) -> None:
    spec = resolve("policy", f"{agents}:UdpDeclared")
    assert spec.sandbox_needs.udp == (udp.port,) and spec.sandbox_needs.opened == ("udp",)
    reply = first_reply(f"{agents}:UdpDeclared?route=udp&arg={udp.port}")
    assert reply == "GOT 'sent'" and udp.received() == b"remember-this"


def test_a_store_port_is_refused_even_when_declared(agents: str, store_port: int) -> None:
    plan = sandbox.plan(
        f"{agents}:StorePortDeclared", resolve("policy", f"{agents}:StorePortDeclared").sandbox_needs
    )
    assert store_port in plan.refused_ports and store_port not in plan.connect
    reply = first_reply(f"{agents}:StorePortDeclared?route=tcp&arg={store_port}")
    assert reply.startswith("DENIED"), reply


def test_what_python_needs_still_works(agents: str) -> None:
    """The filters leave a plain agent its socket pairs (asyncio's loop) and `/etc`'s files for
    names, time zones and TLS, and nothing else of `/etc`."""
    assert first_reply(f"{agents}:Probe?route=socketpair") == "GOT b'pair'"
    assert first_reply(f"{agents}:Probe?route=read&arg=/etc/hosts").startswith("GOT")
    assert first_reply(f"{agents}:Probe?route=read&arg=/etc/shadow").startswith("DENIED")
