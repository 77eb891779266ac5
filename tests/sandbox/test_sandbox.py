"""The OS sandbox around import-path agents (`castbench._agents.sandbox`): hostile agents, written
here as a team would write its own (a module in a folder of its own, named by import path), try
every route to the ground truth, the results, castbench's process and the network, and find
nothing; a replaying attacker stays at the `scripted:lookup-refuse` floor; an honest agent gets
what it declares. Run with `CASTBENCH_SANDBOX=off`, the attacks succeed (the tests fail)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import uuid
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from castbench._agents.registry import resolve
from castbench._run.api import evaluate
from castbench.agents import sandbox
from castbench.domain import load_domain
from tests.sandbox.probing import PROBE, Banner, first_reply, kernel_support
from tests.support import DOMAINS, sqlite_url

pytestmark = pytest.mark.skipif(
    not kernel_support().available, reason=f"no sandbox here: {kernel_support().reason}"
)

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-castbench-test-secret-7f3a"

AGENTS = '''
"""Agents that try to leave their sandbox: each tells what it got in its first reply."""
import os, socket, sys

from castbench._base.conversation import ReplyAction, UserTurn
from castbench._base.dialogue import ANYTHING_ELSE
from castbench._agents.scripted.oracle import OraclePolicy
from castbench._agents.views import PrivilegedBriefing


def _read(path, size=200):
    with open(path, "rb") as handle:
        return handle.read(size)


def _unguarded_import(name):
    os.environ.setdefault("OPENAI_API_KEY", "placeholder")  # tau_trait wants one at import
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_RefuseDomains"]
    return __import__(name)


def attempt(route, arg):
    # castbench's PID as the test knows it: in a PID namespace of its own the agent's parent has none
    ppid = int(arg) if route in ("proc-cmdline", "proc-environ", "proc-fd", "proc-mem", "signal") else 0
    if route == "task-file":
        return _read(arg)
    if route == "domain-import":
        return _unguarded_import(arg).__file__
    if route == "proc-cmdline":
        return _read(f"/proc/{ppid}/cmdline")
    if route == "proc-environ":
        return _read(f"/proc/{ppid}/environ")
    if route == "proc-fd":
        return [os.readlink(f"/proc/{ppid}/fd/{fd}") for fd in os.listdir(f"/proc/{ppid}/fd")]
    if route == "proc-mem":
        with open(f"/proc/{ppid}/maps") as maps:
            start = int(maps.readline().split("-")[0], 16)
        with open(f"/proc/{ppid}/mem", "rb") as mem:
            mem.seek(start)
            return mem.read(64)
    if route == "proc-root":
        return _read(f"/proc/self/root{arg}")
    if route == "read":
        return _read(arg)
    if route == "list":
        return os.listdir(arg)
    if route == "write":
        with open(arg, "w") as handle:
            handle.write("escaped")
        return "written"
    if route == "env":
        return os.environ[arg]
    if route == "connect":
        with socket.create_connection(("127.0.0.1", int(arg)), timeout=5) as conn:
            return conn.recv(64)
    if route == "signal":
        os.kill(ppid, 0)
        return "signalled"
    if route == "held-paths":  # descriptors of files or folders this process was given
        held = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                held.append(os.readlink(f"/proc/self/fd/{fd}"))
            except FileNotFoundError:
                pass  # the listing's own descriptor, closed since
        # its own output (an in-memory file, no path) is the one file it holds
        paths = [p for p in held if p.startswith("/") and not p.startswith(("/proc/", "/dev/", "/memfd:"))]
        if paths:
            return paths
        raise PermissionError("no descriptor of a path")
    raise ValueError(route)


PROBE_CLASS


class Replayer:
    """Finds its trial's task by any route it can (the domain's task file by path, the domain
    package with the import guard removed) and replays its ground truth as the oracle does."""

    def __init__(self, briefing, tasks=""):
        self.briefing, self.tasks, self.oracle, self.looked = briefing, tasks, None, False

    def _candidates(self):
        if self.tasks:
            try:
                from castbench._domain.task import load_tasks

                yield from load_tasks(self.tasks)
            except Exception:
                pass
        try:
            sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_RefuseDomains"]
            from castbench.domain import load_domain

            yield from load_domain(self.briefing.domain).tasks()
        except Exception:
            pass

    def propose(self, view):
        if not self.looked:
            self.looked = True
            opening = view.conversation[0]
            request = opening.text if isinstance(opening, UserTurn) else None
            task = next((t for t in self._candidates() if t.scenario.request == request), None)
            if task is not None:
                b = self.briefing
                stolen = PrivilegedBriefing(
                    b.domain, b.policy, b.tools, b.write_tools, b.seed, b.trial_index, task=task
                )
                self.oracle = OraclePolicy(stolen)
        if self.oracle is not None:
            return self.oracle.propose(view)
        return ReplyAction(text=ANYTHING_ELSE)


class Greedy(Probe):
    """Declares it reads everything."""

    sandbox_read = ("/",)


class Honest:
    """Declares a key and a port; uses them and its scratch folder."""

    sandbox_env = ("CASTBENCH_TEST_KEY",)
    sandbox_connect = (PORT,)

    def __init__(self, briefing):
        pass

    def propose(self, view):
        with open("notes.txt", "w") as handle:
            handle.write("scratch works")
        with open(os.path.join(os.environ["TMPDIR"], "t"), "w") as handle:
            handle.write("tmp works")
        with socket.create_connection(("127.0.0.1", PORT), timeout=5) as conn:
            banner = conn.recv(64).decode()
        text = f"{os.environ.get('CASTBENCH_TEST_KEY')} {_read('notes.txt').decode()} {banner}"
        return ReplyAction(text=text + " " + ANYTHING_ELSE)
'''.replace("PROBE_CLASS", PROBE)


class _Listener(Banner):
    """A loopback TCP server that greets whoever connects with a banner (the thing an agent
    must not reach unless it declared the port)."""

    def __init__(self) -> None:
        super().__init__(socket.create_server(("127.0.0.1", 0)), b"BANNER-secret-service")
        self.port = self.server.getsockname()[1]


@pytest.fixture(scope="module")
def listener() -> Iterator[_Listener]:
    served = _Listener()
    yield served
    served.server.close()


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory, listener: _Listener) -> Iterator[str]:
    """The hostile agents' module, in a folder of its own on `sys.path` (as a team's would be)."""
    folder = tmp_path_factory.mktemp("team")
    (folder / "sbx_agents.py").write_text(AGENTS.replace("PORT", str(listener.port)))
    sys.path.insert(0, str(folder))
    os.environ["CASTBENCH_TEST_SECRET"] = SECRET
    os.environ["CASTBENCH_TEST_KEY"] = "declared-key-value"
    yield "sbx_agents"
    sys.path.remove(str(folder))
    os.environ.pop("CASTBENCH_TEST_SECRET")
    os.environ.pop("CASTBENCH_TEST_KEY")


@pytest.fixture
def model_folder() -> Iterator[Path]:
    """A folder outside the temporary folders (declared reads never reach those), as a model's."""
    folder = Path.home() / ".cache" / f"castbench-test-models-{uuid.uuid4().hex[:12]}"
    folder.mkdir(parents=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _package_file(name: str, *parts: str) -> str:
    spec = find_spec(name)
    assert spec is not None and spec.submodule_search_locations
    return str(Path(next(iter(spec.submodule_search_locations)), *parts))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results store castbench has open, with a run in it (as during an eval)."""
    path = tmp_path_factory.mktemp("store") / "runs.db"
    evaluate(domains="retail", policy="oracle", trials=1, tasks=["retail-test-0001"], db=sqlite_url(path))
    from castbench._records.store import ResultsStore

    opened = ResultsStore(sqlite_url(path))
    opened.runs()  # a connection stays open, as in a running eval
    return path


def _routes(store: Path, tmp: Path, port: int) -> dict[str, tuple[str, str]]:
    export = next((REPO / "results").rglob("*.json.gz"))
    routes = {
        "the domain's task file, by path": (
            "task-file",
            _package_file("castbench_retail", "tasks", "test.json"),
        ),
        "the domain package, import guard removed": ("domain-import", "castbench_retail"),
        "castbench's command line": ("proc-cmdline", str(os.getpid())),
        "castbench's environment": ("proc-environ", str(os.getpid())),
        "castbench's open files": ("proc-fd", str(os.getpid())),
        "castbench's memory": ("proc-mem", str(os.getpid())),
        "the repository through /proc/self/root": ("proc-root", str(REPO / "pyproject.toml")),
        "the results store": ("read", str(store)),
        "the store's folder": ("list", str(store.parent)),
        "the repository's committed exports": ("read", str(export)),
        "the repository": ("list", str(REPO / "domains")),
        "a file outside its scratch folder": ("write", str(tmp / "escaped.txt")),
        "a secret in castbench's environment": ("env", "CASTBENCH_TEST_SECRET"),
        "a loopback port it did not declare": ("connect", str(port)),
        "a signal to castbench": ("signal", str(os.getpid())),
        "the template's prepared descriptors": ("held-paths", ""),
    }
    if find_spec("tau_trait") is not None:
        routes["τ's data package"] = ("domain-import", "tau_trait")
        routes["τ's data files, by path"] = (
            "read",
            _package_file("tau_trait", "envs", "retail", "tasks_test.py"),
        )
    return routes


@pytest.fixture(scope="module")
def undeclared_port() -> Iterator[int]:
    """A second listener the probe agent does not declare (the first is the honest agent's)."""
    served = _Listener()
    yield served.port
    served.server.close()


@pytest.mark.parametrize(
    "route",
    [
        "the domain's task file, by path",
        "the domain package, import guard removed",
        "castbench's command line",
        "castbench's environment",
        "castbench's open files",
        "castbench's memory",
        "the repository through /proc/self/root",
        "the results store",
        "the store's folder",
        "the repository's committed exports",
        "the repository",
        "a file outside its scratch folder",
        "a secret in castbench's environment",
        "a loopback port it did not declare",
        "a signal to castbench",
        "the template's prepared descriptors",
        "τ's data package",
        "τ's data files, by path",
    ],
)
def test_a_hostile_agent_gets_nothing_by_any_route(
    route: str, agents: str, store: Path, tmp_path: Path, undeclared_port: int
) -> None:
    routes = _routes(store, tmp_path, undeclared_port)
    if route not in routes:
        pytest.skip("tau-trait is not installed")
    name, arg = routes[route]
    reply = first_reply(f"{agents}:Probe?route={name}&arg={arg}")
    assert reply.startswith("DENIED"), f"{route}: {reply}"
    assert SECRET not in reply and "BANNER" not in reply
    assert not (tmp_path / "escaped.txt").exists()


def _change_tasks(domain: str, count: int = 2) -> list[str]:
    return [task.id for task in load_domain(domain).tasks("test") if task.outcome == "change"][:count]


def _replay_domains() -> list[object]:
    """The built-in domains and the τ retail pack (skipped without the tau extra)."""
    return [*DOMAINS, pytest.param("tau-retail", marks=pytest.mark.extra("tau"))]


@pytest.mark.parametrize("domain", _replay_domains())
def test_a_replaying_attacker_stays_at_the_lookup_refuse_floor(
    domain: str, agents: str, tmp_path: Path
) -> None:
    package = load_domain(domain).root / "tasks" / "test.json"
    result = evaluate(
        domains=domain,
        policy=f"{agents}:Replayer?tasks={package}",
        trials=1,
        tasks=_change_tasks(domain),
        db=sqlite_url(tmp_path / "r.db"),
    )
    summary = result.summary
    assert summary.floors is not None
    floor = summary.floors.domains[domain]["lookup-refuse"][1]
    assert summary.domains[domain].pass_hat[1] <= floor + 0.02, (domain, summary.domains[domain].pass_hat)
    assert summary.domains[domain].end_reasons.get("harness_error", 0) == 0


def test_an_honest_agent_gets_what_it_declares_and_its_scratch_folder(
    agents: str, listener: _Listener
) -> None:
    spec = resolve("policy", f"{agents}:Honest")
    assert spec.sandbox_needs.env == ("CASTBENCH_TEST_KEY",)
    assert spec.sandbox_needs.connect == (listener.port,)
    reply = first_reply(f"{agents}:Honest")
    assert reply.startswith("declared-key-value scratch works BANNER-secret-service"), reply


def test_a_malformed_declaration_is_refused_naming_the_attribute(tmp_path: Path) -> None:
    (tmp_path / "sbx_bad.py").write_text(
        "class Bad:\n    sandbox_connect = '8000'\n    def __init__(self, b): pass\n"
        "    def propose(self, view): pass\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ValueError, match="sandbox_connect must be a tuple"):
            resolve("policy", "sbx_bad:Bad")
    finally:
        sys.path.remove(str(tmp_path))


def test_support_says_what_the_kernel_offers_and_the_operator_can_switch_it_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = sandbox.support()
    assert found.available and found.mechanism.startswith("landlock ABI ") and found.abi >= 4
    monkeypatch.setenv("CASTBENCH_SANDBOX", "off")
    off = sandbox._probe_support()
    assert not off.available and "CASTBENCH_SANDBOX=off" in off.reason


def test_the_plan_carves_protected_packages_out_of_site_packages() -> None:
    plan = sandbox.plan("sbx_agents:Probe")
    retail = _package_file("castbench_retail")
    readable = [path for path, rights in plan.grants if rights & sandbox.READ_FILE]
    # not even through a parent (a parent may be listed, never read)
    assert not any(Path(retail).is_relative_to(path) for path in readable)
    assert retail in plan.kept_out
    # the checkout: kept out when castbench is installed editable from it; otherwise (a wheel, a
    # plain clone beside it) never granted at all
    if sandbox._checkout() == str(REPO):
        assert str(REPO) in plan.kept_out
    assert not any(Path(REPO).is_relative_to(path) for path in readable)
    assert json.loads(plan.model_dump_json())["abi"] == sandbox.support().abi


def test_an_agent_package_holding_a_store_is_refused(tmp_path: Path, listener: _Listener) -> None:
    """An agent's package is granted whole, so one that holds a results store (here the run's
    own, open in castbench) is not granted at all: the agent is refused, naming the store."""
    from castbench._records.store import ResultsStore

    package = tmp_path / "teampkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agents.py").write_text(AGENTS.replace("PORT", str(listener.port)))
    db = package / "runs.db"
    opened = ResultsStore(sqlite_url(db))
    opened.runs()  # its connection stays open, as during an eval
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(sandbox.AgentPackageError, match="holds castbench results"):
            resolve("policy", f"teampkg.agents:Probe?route=read&arg={db}")
    finally:
        sys.path.remove(str(tmp_path))


def test_planning_a_worker_keeps_the_locks_the_store_holds(tmp_path: Path) -> None:
    """Finding what castbench has open must not drop SQLite's locks on a live store (closing any
    descriptor of a file drops all of a process's POSIX locks on it): a reader in another process
    would take the store for unused, rebuild its `-shm`, and the eval would die of a short read."""
    import sqlite3
    import subprocess

    db = tmp_path / "live.db"
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("create table t (x)")
    writer.execute("BEGIN EXCLUSIVE")
    try:
        assert str(db.parent) in sandbox.plan("sbx_agents:Probe").kept_out
        take = f"import sqlite3; sqlite3.connect({str(db)!r}, timeout=0).execute('BEGIN EXCLUSIVE')"
        other = subprocess.run(
            [sys.executable, "-c", take],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert other.returncode != 0 and "database is locked" in other.stderr, other.stderr


def test_a_declared_read_reaches_files_but_never_what_is_kept_out(agents: str, model_folder: Path) -> None:
    data = model_folder / "weights.bin"
    data.write_bytes(b"model weights")
    assert resolve("policy", f"{agents}:Greedy").sandbox_needs.read == ("/",)
    assert first_reply(f"{agents}:Greedy?route=read&arg={data}") == "GOT b'model weights'"
    task_file = _package_file("castbench_retail", "tasks", "test.json")
    for route, arg in [
        ("task-file", task_file),
        ("proc-environ", str(os.getpid())),
        ("read", str(REPO / "pyproject.toml")),
    ]:
        reply = first_reply(f"{agents}:Greedy?route={route}&arg={arg}")
        assert reply.startswith("DENIED"), (route, reply)
