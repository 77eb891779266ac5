"""Issue 56, the trust boundary's third pass, by class: hostile agents written here in variants
of each route the red team found. castbench's process runs no code from outside its
installation (it refuses to start); a trial sees no task data merged into its namespace, by
whatever name; it cannot name, limit or signal any other process; its memory, files, processes
and CPU are bounded; nothing of one trial is in the next one's memory. With
`CASTBENCH_SANDBOX=off` the attacks that need the sandbox succeed (these tests fail)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from castbench._agents.paths import AGENT_PATH_ENV
from castbench._agents.registry import resolve
from castbench.agents import confine, sandbox, startup
from tests.sandbox.probing import PROBE, first_reply, kernel_support

pytestmark = pytest.mark.skipif(
    not kernel_support().available, reason=f"no sandbox here: {kernel_support().reason}"
)

REPO = Path(__file__).resolve().parents[2]
CASTBENCH = [sys.executable, "-c", "from castbench._cli.app import main; main()"]

AGENTS = '''
"""Agents that reach for other processes, bounds and memory."""
import ctypes, mmap, os, resource, secrets, signal, threading

from castbench._base.conversation import ReplyAction


def attempt(route, arg):
    pid = int(arg) if arg.isdigit() else 0
    if route == "kill":
        os.kill(pid, 0)
        return "signalled"
    if route == "kill-all":  # every process it may signal
        os.kill(-1, signal.SIGKILL)
        return "killed all"
    if route == "prlimit":
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (64, 64))
        return "limited"
    if route == "setpriority":
        os.setpriority(os.PRIO_PROCESS, pid, 19)
        return "reniced"
    if route == "affinity":
        os.sched_setaffinity(pid, {0})
        return "pinned"
    if route == "pidfd":
        signal.pidfd_send_signal(os.pidfd_open(pid), 0)
        return "signalled through a pidfd"
    if route == "kill9":
        os.kill(pid, signal.SIGKILL)
        return "killed"
    if route == "whoami":
        return f"pid {os.getpid()} uid {os.getuid()} nproc {resource.getrlimit(resource.RLIMIT_NPROC)}"
    if route == "memory":
        block = bytearray(int(arg) << 20)
        block[::4096] = b"x" * len(block[::4096])
        return f"held {len(block) >> 20} MiB"
    if route == "disk":
        with open("big.bin", "wb") as handle:
            for _ in range(int(arg)):
                handle.write(b"x" * (1 << 20))
        return f"wrote {int(arg)} MiB"
    if route == "threads":  # the bound on processes, not on memory: one malloc arena, small stacks
        ctypes.CDLL(None).mallopt(-8, 1)  # M_ARENA_MAX (a thread's arena reserves 64 MiB of 1G)
        threading.stack_size(256 * 1024)
        started = []
        for _ in range(int(arg)):
            thread = threading.Thread(target=threading.Event().wait, daemon=True)
            thread.start()
            started.append(thread)
        return f"started {len(started)}"
    if route == "forks":
        children = []
        for _ in range(int(arg)):
            child = os.fork()
            if child == 0:
                signal.pause()
                os._exit(0)
            children.append(child)
        return f"forked {len(children)}"
    if route == "burn":
        while True:
            pass
    raise ValueError(route)


PROBE_CLASS


_SECRET = "TRIALSECRET-"


class HeapReader:
    """Writes a secret of its own to its output (what castbench keeps of a trial), then looks
    for an earlier trial's secret anywhere in its own memory."""

    def __init__(self, briefing):
        self.mine = _SECRET + secrets.token_hex(8)

    def propose(self, view):
        print((self.mine + " ") * 2000, flush=True)  # 58 KB, within what castbench keeps
        found = set()
        with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
            for line in maps:
                span, perms = line.split()[:2]
                if "r" not in perms or "[vvar" in line or "[vsyscall" in line:
                    continue
                start, end = (int(x, 16) for x in span.split("-"))
                try:
                    mem.seek(start)
                    data = mem.read(end - start)
                except (OSError, ValueError, OverflowError):
                    continue
                at = data.find(_SECRET.encode())
                while at >= 0:
                    token = data[at : at + len(_SECRET) + 16].decode(errors="replace")
                    tail = token[len(_SECRET):]
                    if token != self.mine and len(tail) == 16 and all(c in "0123456789abcdef" for c in tail):
                        found.add(token)
                    at = data.find(_SECRET.encode(), at + 1)
        return ReplyAction(text=f"FOUND {sorted(found)}")
'''.replace("PROBE_CLASS", PROBE)


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("team56")
    (folder / "sbx_boundary.py").write_text(AGENTS)
    sys.path.insert(0, str(folder))
    yield "sbx_boundary"
    sys.path.remove(str(folder))


def _template_pids() -> list[int]:
    """The worker templates: this process's children running castbench's worker module."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    cmdline = handle.read()
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rpartition(")")[2].split()[1])
            except OSError:
                continue
            if parent == os.getpid() and b"castbench._agents.transports.serve" in cmdline:
                found.append(int(entry))
    return found


# -- 1. castbench's own process runs no agent code --------------------------------------------------


def _castbench(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CASTBENCH_"))}
    full.update(env)
    return subprocess.run(
        [*CASTBENCH, *(args or ("policies", "list"))],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=env.get("CWD", str(REPO)),
    )


HIDING_SITECUSTOMIZE = """
import os, sys
open(os.environ["MARK"], "w").write("ran in castbench")
# what a careful attacker does next: leave no trace of itself
__file__ = __spec__.origin = os.path.join(os.path.dirname(os.__file__), "sitecustomize.py")
os.environ.pop("PYTHONPATH", None)
sys.path[:] = [p for p in sys.path if "team" not in p]
"""

SHADOW = """
import importlib, os, sys
open(os.environ["MARK"], "w").write("shadow")
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
del sys.modules[__name__]
sys.modules[__name__] = importlib.import_module(__name__)  # the real one, in its place
"""


@pytest.mark.parametrize(
    "files",
    [
        {"sitecustomize.py": HIDING_SITECUSTOMIZE},
        {"usercustomize.py": HIDING_SITECUSTOMIZE, "sitecustomize.py": "import usercustomize\n"},
        {"typer.py": SHADOW},
        {"pydantic.py": SHADOW},
    ],
    ids=[
        "sitecustomize that hides itself",
        "usercustomize",
        "a shadowing typer.py",
        "a shadowing rich package",
    ],
)
def test_castbench_refuses_to_start_after_code_from_an_agent_folder_could_run(
    files: dict[str, str], tmp_path: Path
) -> None:
    team = tmp_path / "team"
    for name, text in files.items():
        (team / name).parent.mkdir(parents=True, exist_ok=True)
        (team / name).write_text(text)
    mark = tmp_path / "mark"
    done = _castbench({"PYTHONPATH": str(team), "MARK": str(mark)})
    assert done.returncode == startup.EXIT_CODE, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "outside castbench" in lines[0], lines


def test_castbench_starts_from_its_own_installation_and_with_agent_folders_given_to_it(
    tmp_path: Path,
) -> None:
    assert _castbench({}).returncode == 0
    # the checkout's root (the test suite's) is castbench's own when installed editable from it;
    # beside a wheel install it is a folder like any other, whose code could run at start-up
    from_checkout = sandbox._checkout() == str(REPO)
    at_root = _castbench({"PYTHONPATH": str(REPO)})
    assert at_root.returncode == (0 if from_checkout else startup.EXIT_CODE), at_root.stderr
    done = _castbench({AGENT_PATH_ENV: str(tmp_path)})
    assert done.returncode == 0, done.stderr


def test_a_pth_file_of_a_distribution_castbench_does_not_require_is_found(tmp_path: Path) -> None:
    """An agent distribution `pip install`ed into castbench's environment runs its `.pth` at
    every start of castbench: found by the distribution that installed it."""
    (tmp_path / "evil_agent-1.0.dist-info").mkdir()
    (tmp_path / "evil_agent-1.0.dist-info" / "RECORD").write_text("evil_agent.pth,,\n")
    (tmp_path / "evil_agent-1.0.dist-info" / "METADATA").write_text("Name: evil-agent\n\n")
    (tmp_path / "evil_agent.pth").write_text("import os; os.system('true')\n")
    (tmp_path / "orphan.pth").write_text("import sys\n")
    (tmp_path / "paths.pth").write_text("/somewhere\n")  # a path line runs nothing
    names = startup._executable_pth(str(tmp_path))
    assert names == ["evil_agent.pth", "orphan.pth"]
    assert startup._untrusted_pth(str(tmp_path), names) == {"evil_agent.pth": "evil-agent", "orphan.pth": ""}


def test_an_editable_domain_pack_s_pth_file_is_castbench_s_own(tmp_path: Path) -> None:
    """`castbench domains new shop` then `pip install -e castbench_shop` (docs/domains.md): the
    pack's editable finder runs at start-up, and the pack's code runs in castbench's process by
    design (its tools, its graders). The same `.pth` from an agent's distribution stays refused."""
    pth = "__editable__.castbench_shop-0.1.0.pth"
    module = "__editable___castbench_shop_0_1_0_finder"
    finder = f"import {module}; {module}.install()\n"
    info = tmp_path / "castbench_shop-0.1.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text(f"{pth},,\n")
    (info / "METADATA").write_text("Name: castbench-shop\nRequires-Dist: castbench\n\n")
    (tmp_path / pth).write_text(finder)
    names = startup._executable_pth(str(tmp_path))
    assert names == [pth]
    assert startup._untrusted_pth(str(tmp_path), names) == {pth: "castbench-shop"}  # no entry point yet
    (info / "entry_points.txt").write_text("[castbench.agents]\nshop = castbench_shop:agent\n")
    assert startup._untrusted_pth(str(tmp_path), names) == {pth: "castbench-shop"}  # an agent's: refused
    (info / "entry_points.txt").write_text("[castbench.domains]\nshop = castbench_shop:domain\n")
    assert startup._untrusted_pth(str(tmp_path), names) == {}


def test_an_agent_given_through_castbench_is_never_imported_in_its_process(tmp_path: Path) -> None:
    team = tmp_path / "teamdir"
    (team / "agent56").mkdir(parents=True)
    (team / "agent56" / "__init__.py").write_text(
        "import os\nos.environ['AGENT56_RAN'] = str(os.getpid())\n"
        "from castbench._base.conversation import ReplyAction\n"
        "class Policy:\n    def __init__(self, briefing):\n        pass\n"
        "    def propose(self, view):\n        return ReplyAction(text='GOT ' + os.environ['AGENT56_RAN'])\n"
    )
    os.environ[AGENT_PATH_ENV] = str(team)
    try:
        reply = first_reply("agent56:Policy")
    finally:
        del os.environ[AGENT_PATH_ENV]
    assert reply.startswith("GOT ") and reply != f"GOT {os.getpid()}"
    assert "agent56" not in sys.modules and "AGENT56_RAN" not in os.environ
    assert str(team) not in sys.path


# -- 2. a trial sees only its own files ---------------------------------------------------------------


def _tasks_json() -> str:
    import castbench_retail

    return str(Path(castbench_retail.__file__).parent / "tasks" / "test.json")


@pytest.fixture
def cwd_like(tmp_path: Path) -> Iterator[Path]:
    """A folder on the workers' path that holds task data under the agent's package name (what
    `<cwd>/domains` of a clone is to `--policy domains.x:Agent`)."""
    yield tmp_path / "clone"


def _write_agent(folder: Path, package: str) -> None:
    (folder / package).mkdir(parents=True, exist_ok=True)
    (folder / package / "x.py").write_text(
        "from castbench._base.conversation import ReplyAction\n"
        "class Agent:\n    def __init__(self, briefing):\n        pass\n"
        "    def propose(self, view):\n        return ReplyAction(text='hello')\n"
    )


def _forget(package: str) -> None:
    for module in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[module]


@pytest.mark.parametrize(
    ("package", "make"),
    [
        ("domains", lambda p: shutil.copy(_tasks_json(), p / "test.json")),
        (
            "private",
            lambda p: (p / "split-a1.json").write_text(
                json.dumps({"format": "castbench-private-split/1", "tasks": []})
            ),
        ),
        ("team_notes", lambda p: shutil.copy(_tasks_json(), p / "innocent.bin")),
        (
            "shared",
            lambda p: (p / "t.json").write_text(
                json.dumps([{"scenario": {}, "outcome": "change", "family": "f", "id": "x"}], indent=None)
            ),
        ),
    ],
    ids=[
        "domains merged with a clone's",
        "private splits",
        "a renamed copy of a task file",
        "re-serialised tasks",
    ],
)
def test_a_namespace_package_merging_with_task_data_is_refused_whatever_its_name(
    package: str, make: object, tmp_path: Path
) -> None:
    team, clone = tmp_path / "team", tmp_path / "clone"
    _write_agent(team, package)
    (clone / package).mkdir(parents=True)
    make(clone / package)  # type: ignore[operator]
    sys.path[:0] = [str(team), str(clone)]
    try:
        with pytest.raises(sandbox.AgentPackageError, match="task data"):
            resolve("policy", f"{package}.x:Agent")
    finally:
        sys.path.remove(str(team))
        sys.path.remove(str(clone))
        _forget(package)


def test_a_tau_task_module_copied_under_another_name_is_found_by_content(tmp_path: Path) -> None:
    installed = sandbox._package_paths("tau_trait")
    tasks = Path(installed[0]) / "envs" / "retail" / "tasks_test.py" if installed else None
    if tasks is None or not tasks.is_file():
        pytest.skip("tau_trait is not installed (the `tau` extra)")
    shutil.copy(tasks, tmp_path / "helpers.py")
    assert sandbox.is_results_file(str(tmp_path / "helpers.py"))
    data = next((Path(sandbox._package_paths("castbench_retail")[0]) / "data").iterdir())
    shutil.copy(data, tmp_path / "weights.bin")  # pack data, renamed: a copy by its content
    assert sandbox.is_results_file(str(tmp_path / "weights.bin"))


def test_every_path_of_castbench_tasks_files_and_their_folders_are_kept_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = tmp_path / "a" / "split-1.json", tmp_path / "b" / "split-2.json"
    for path in (one, two):
        path.parent.mkdir()
        path.write_text("{}")
    (tmp_path / "a" / "next-split.json").write_text("{}")  # the publisher's next one, not named yet
    monkeypatch.setenv("CASTBENCH_TASKS_FILES", os.pathsep.join([str(one), str(two)]))
    kept = sandbox._configured()
    assert {str(one), str(two), str(one.parent), str(two.parent)} <= kept


# -- 3. a trial cannot name, limit or signal another process --------------------------------------------


@pytest.mark.parametrize("route", ["kill", "prlimit", "setpriority", "affinity", "pidfd"])
def test_a_trial_cannot_reach_castbench_or_its_template(agents: str, route: str) -> None:
    assert first_reply(f"{agents}:Probe?route=whoami").startswith("GOT 'pid ")  # a worker is up
    for target in [os.getpid(), *_template_pids()]:
        before = os.sched_getaffinity(target), os.getpriority(os.PRIO_PROCESS, target)
        reply = first_reply(f"{agents}:Probe?route={route}&arg={target}")
        assert reply.startswith("DENIED"), f"{route} on {target}: {reply}"
        assert (os.sched_getaffinity(target), os.getpriority(os.PRIO_PROCESS, target)) == before
    if confine.can_unshare_pid():  # PID 1 of its namespace is itself: nothing else to name there
        assert first_reply(f"{agents}:Probe?route=whoami").startswith("GOT 'pid 1 ")


def test_a_trial_is_alone_in_a_pid_namespace_of_its_own_as_a_user_of_its_own(agents: str) -> None:
    reply = first_reply(f"{agents}:Probe?route=whoami")
    if confine.can_unshare_pid():
        assert reply.startswith("GOT 'pid 1 "), reply  # PID 1 of a namespace of its own
        assert "a PID namespace per trial" in sandbox.support().mechanism  # on the run's record
    if os.geteuid() == 0:
        uid = int(reply.split(" uid ")[1].split()[0])
        assert uid >= confine.UID_BASE, reply
    templates = _template_pids()
    first_reply(f"{agents}:Probe?route=kill-all")  # every process it may signal: its own only
    assert all(os.path.exists(f"/proc/{pid}") for pid in templates), "kill(-1) reached a template"


# -- 5. bounds per trial ------------------------------------------------------------------------------


@pytest.fixture
def tight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(confine.LIMITS_ENV, "memory=1G,file=4M,processes=24,cpu=2")


@pytest.mark.parametrize(
    ("route", "arg"),
    [("memory", "1500"), ("disk", "16"), ("threads", "64"), ("forks", "64")],
    ids=["memory", "disk in scratch", "threads", "processes"],
)
@pytest.mark.usefixtures("tight")
def test_a_trial_past_a_bound_fails_as_the_agent(agents: str, route: str, arg: str) -> None:
    reply = first_reply(f"{agents}:Probe?route={route}&arg={arg}")
    assert reply.startswith("DENIED"), reply


@pytest.mark.usefixtures("tight")
def test_a_trial_within_its_bounds_works(agents: str) -> None:
    assert first_reply(f"{agents}:Probe?route=memory&arg=64") == "GOT 'held 64 MiB'"
    assert first_reply(f"{agents}:Probe?route=forks&arg=4") == "GOT 'forked 4'"


@pytest.mark.usefixtures("tight")
def test_a_trial_past_its_cpu_time_ends_as_the_agent_s_failure(agents: str) -> None:
    from castbench._trial.rollout import AgentSet, run_trial
    from castbench._trial.spec import TrialSpec
    from castbench.domain import load_domain

    loaded = load_domain("retail")
    task = loaded.tasks("test")[0]
    policy = resolve("policy", f"{agents}:Probe?route=burn")
    agents = AgentSet(policy=policy, user=resolve("user", "scripted"))
    record = run_trial(TrialSpec(loaded, task, 0, 1, agents, loaded.replay(task)))
    assert record.end_reason == "agent_error", record.end_reason
    assert "CPU time limit" in (record.error or ""), record.error  # SIGXCPU, or the hard kill


def test_limits_are_read_from_their_variable_and_bad_ones_name_the_item() -> None:
    assert confine.limits_from_env("") == confine.DEFAULT_LIMITS
    assert confine.limits_from_env("memory=512M, cpu=30s, processes=none") == confine.TrialLimits(
        memory=512 << 20, file=1 << 30, processes=0, cpu=30
    )
    with pytest.raises(ValueError, match="'disk=1G'"):
        confine.limits_from_env("disk=1G")
    with pytest.raises(ValueError, match="lots"):
        confine.limits_from_env("memory=lots")


# -- 7. nothing of one trial in the next one's memory ---------------------------------------------------


def test_no_trial_finds_an_earlier_trial_s_output_in_its_memory(agents: str) -> None:
    replies = [first_reply(f"{agents}:HeapReader") for _ in range(4)]  # one worker, one after another
    assert replies == ["FOUND []"] * 4, replies


def test_the_template_never_reads_what_a_trial_leaves() -> None:
    """Its output (castbench reads it), its exit status, CPU time and stray processes (castbench
    reads them from `/proc` where the trial's process is PID 1 of its namespace, its keeper where
    there is none): the template reads none of them, and reaps with no status to fill."""
    import inspect

    from castbench._agents.transports import serve

    template = "".join(
        inspect.getsource(f)
        for f in (serve._Template, serve._await_keeper, serve._forget_children, serve._reap_unread)
    )
    for call in ("os.read(", "wait4(", "waitpid(", "_reap_everything(", "_reap_namespace(", "_status("):
        assert call not in template, call
    assert "_libc.waitid(_P_PID if pid else _P_ALL, pid, None, _WEXITED)" in template  # no siginfo


# -- scratch trees of a killed castbench -----------------------------------------------------------------


def test_scratch_trees_of_a_killed_castbench_are_removed_at_the_next_start(tmp_path: Path) -> None:
    from castbench._agents.transports import worker

    code = (
        "import os, sys; sys.path.insert(0, sys.argv[1])\n"
        "from castbench._agents.transports import worker\n"
        "root = worker._scratch_root(); open(os.path.join(root, 'left'), 'w').close()\n"
        "print(root, flush=True); os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(REPO)], capture_output=True, text=True, timeout=60)
    left = done.stdout.strip()
    assert left and os.path.isdir(left), done.stderr
    worker.remove_stale_scratch()
    assert not os.path.exists(left)
    assert os.path.isdir(worker._scratch_root())  # this process's own stays


def test_an_unrelated_folder_of_the_same_shape_is_left_alone(tmp_path: Path) -> None:
    from castbench._agents.transports import worker

    other = Path(worker.tempfile.gettempdir()) / f"castbench-agents-{uuid.uuid4().hex[:8]}"
    other.mkdir()
    try:
        worker.remove_stale_scratch()
        assert other.is_dir()  # no owner on record: not castbench's to remove
    finally:
        shutil.rmtree(other)


# -- 4. castbench's death on the record ----------------------------------------------------------------


def test_a_trial_castbench_died_in_counts_as_an_attempt_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal
    import time

    from castbench._records.journal import LOST
    from castbench._records.store import ResultsStore
    from castbench._results.compare.comparability import isolation_problems
    from castbench._run.api import evaluate
    from tests.support import sqlite_url

    state, db = tmp_path / "state", sqlite_url(tmp_path / "runs.db")
    team = tmp_path / "team"  # the agent in a folder of its own, given through castbench
    team.mkdir()
    shutil.copy(Path(__file__).with_name("hang_agents.py"), team / "hang_agents.py")
    options = dict(domains="retail", policy="hang_agents:Hanger", trials=1, db=db)
    tasks = ["retail-test-0001", "retail-test-0002"]
    code = f"from castbench._run.api import evaluate; evaluate(tasks={tasks!r}, **{options!r})"
    env = {**os.environ, "HANG56": "1", "CASTBENCH_STATE_DIR": str(state), AGENT_PATH_ENV: str(team)}
    process = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the first trial started (and hangs)
            logs = list((state / "journal").glob("*.log")) if (state / "journal").is_dir() else []
            if logs and logs[0].read_text().startswith("S\t"):
                break
            time.sleep(0.2)
        else:
            pytest.fail("the trial never started")
        time.sleep(1.0)
    finally:
        process.send_signal(signal.SIGKILL)  # castbench dies mid-trial, nothing stored for it
        process.wait()
    monkeypatch.setenv("CASTBENCH_STATE_DIR", str(state))
    monkeypatch.setenv(AGENT_PATH_ENV, str(team))
    result = evaluate(tasks=tasks, **options)  # the docs' advice: run the same command again
    records = {record.task_id: record for record in ResultsStore(db).trials(result.outcome.run_id)}
    assert records["retail-test-0001"].attempts == 2
    assert records["retail-test-0001"].retried_for == [LOST]
    assert records["retail-test-0002"].attempts == 1  # never started before: a first attempt
    assert result.summary.domains["retail"].lost_trials == 1
    assert any(
        "castbench's process was lost" in p for p in isolation_problems(result.summary, result.summary)
    )
    again = evaluate(tasks=tasks, **options)  # charged once: a later resume adds nothing
    assert {r.task_id: r.attempts for r in ResultsStore(db).trials(again.outcome.run_id)}[
        "retail-test-0001"
    ] == 2


def test_a_pack_installed_with_pip_target_is_castbench_s_installation_unless_it_shadows(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    (site / "library_pack").mkdir(parents=True)
    (site / "library_pack" / "__init__.py").write_text("")
    (site / "library_pack-1.0.dist-info").mkdir()
    record = "library_pack/__init__.py,,\nlibrary_pack-1.0.dist-info/RECORD,,\n"
    (site / "library_pack-1.0.dist-info" / "RECORD").write_text(record)
    assert startup._install_target(str(site))
    for name, text in (("typer.py", "x = 1\n"), ("sitecustomize.py", "")):  # shadowing, a start-up hook
        (site / name).write_text(text)
        (site / "library_pack-1.0.dist-info" / "RECORD").write_text(record + f"{name},,\n")
        assert not startup._install_target(str(site)), name
        (site / name).unlink()
    (site / "notes.py").write_text("")  # not installed by any distribution there
    assert not startup._install_target(str(site))


def test_a_namespace_package_merging_with_the_checkout_s_own_folders_is_refused(tmp_path: Path) -> None:
    """castbench installed editable, run from its checkout: `private.x` merges with
    `<checkout>/private`, where a publisher keeps splits not named anywhere yet."""
    checkout = sandbox._checkout()
    if checkout is None:
        pytest.skip("castbench is not installed editable here")
    folder = Path(checkout) / f"private{uuid.uuid4().hex[:6]}"
    (folder).mkdir()
    team = tmp_path / "team"
    _write_agent(team, folder.name)
    (folder / "next-split.json").write_text(json.dumps({"format": "castbench-private-split/1", "tasks": []}))
    sys.path[:0] = [str(team), checkout]
    try:
        with pytest.raises(sandbox.AgentPackageError, match="task data"):
            resolve("policy", f"{folder.name}.x:Agent")
    finally:
        sys.path.remove(str(team))
        sys.path.remove(checkout)
        _forget(folder.name)
        shutil.rmtree(folder)
