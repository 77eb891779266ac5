"""Issue 56's routes on a τ pack too: the hostile agents of `tests/sandbox/hostile.py` (each
route's class in variants of its own: other start-up hooks, another namespace name, System V
IPC, keyrings, netlink, process groups, schedulers, crashes) score at or below the floor on
retail AND `tau-retail`, and the channels between trials they try are refused. The hostile
agents play the ground truth as the oracle does whenever a route hands it over
(`test_a_cheater_handed_the_ground_truth_wins`: the score tests can fail); with
`CASTBENCH_SANDBOX=off` the channel tests fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from castbench._agents.paths import AGENT_PATH_ENV
from castbench._run.api import evaluate
from castbench.agents import sandbox
from castbench.domain import load_domain
from tests.sandbox.hostile import HOOK, MODULE, ROUTES, write_team
from tests.sandbox.probing import first_reply, kernel_support
from tests.support import sqlite_url

pytestmark = pytest.mark.skipif(
    not kernel_support().available, reason=f"no sandbox here: {kernel_support().reason}"
)

PACKS = ["retail", pytest.param("tau-retail", marks=pytest.mark.extra("tau"))]
TASKS, TRIALS = 2, 2


def _tasks(pack: str) -> list[str]:
    return [task.id for task in load_domain(pack).tasks("test") if task.outcome == "change"][:TASKS]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = write_team(tmp_path_factory.mktemp("team56") / "agents")
    os.environ[AGENT_PATH_ENV] = str(folder)  # given through castbench, as the docs say
    yield folder
    os.environ.pop(AGENT_PATH_ENV, None)


def _floor(summary: object, pack: str) -> float:
    floors = summary.floors.domains[pack]  # type: ignore[attr-defined]
    return max(floors["refuse"][1], floors["lookup-refuse"][1])


def _run(pack: str, policy: str, db: Path) -> object:
    return evaluate(
        domains=pack, policy=policy, trials=TRIALS, tasks=_tasks(pack), db=sqlite_url(db), fresh=True
    )


# -- the hostile agents can win: handed the ground truth, they play it --------------------------------


_WIN = """
import json, sys
from castbench._run.api import evaluate
pack, policy, tasks, db = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
summary = evaluate(domains=pack, policy=policy, trials=2, tasks=tasks, db=db, fresh=True).summary
floors = summary.floors.domains[pack]
print(json.dumps([summary.domains[pack].pass_hat[1], max(floors["refuse"][1], floors["lookup-refuse"][1])]))
"""


@pytest.mark.parametrize("pack", PACKS)
def test_a_cheater_handed_the_ground_truth_wins(
    pack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What every score test below would see if its route were open: the hook's loot beside the
    agent's module, read with the sandbox off (in a process of its own: the switch is read once
    per process) it plays every task; sandboxed, the loot is not granted and it refuses."""
    folder = write_team(tmp_path / "agents", hooks=False)
    exec(
        compile(HOOK.replace("os.path.dirname(os.path.abspath(__file__))", repr(str(folder))), "hook", "exec")
    )
    env = {**os.environ, AGENT_PATH_ENV: str(folder), sandbox.SWITCH: "off"}
    args = [pack, f"{MODULE}:StartupHooked", ",".join(_tasks(pack)), sqlite_url(tmp_path / "win.db")]
    done = subprocess.run(
        [sys.executable, "-c", _WIN, *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    score, floor = json.loads(done.stdout.strip().splitlines()[-1])
    assert score == 1.0 > floor
    monkeypatch.setenv(AGENT_PATH_ENV, str(folder))
    summary = _run(pack, f"{MODULE}:StartupHooked", tmp_path / "sandboxed.db").summary  # type: ignore[attr-defined]
    assert summary.domains[pack].pass_hat[1] <= _floor(summary, pack) + 0.02


# -- every route's hostile agents, scored on both packs ----------------------------------------------------

IN_PROCESS = [
    policy
    for route, (_, policies) in ROUTES.items()
    if not route.startswith(("1.", "2.", "7."))
    for policy in policies
]


@pytest.fixture(scope="module")
def scores(team: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], object]:
    """One run per (pack, hostile agent), shared by the tests below."""
    db = tmp_path_factory.mktemp("runs") / "runs.db"
    found: dict[tuple[str, str], object] = {}
    for pack in ("retail", "tau-retail"):
        if pack.startswith("tau") and not _has_tau():  # (its tests are skipped: the `tau` extra)
            continue
        for policy in IN_PROCESS:
            found[pack, policy] = _run(pack, f"{MODULE}:{policy}", db).summary  # type: ignore[attr-defined]
    return found


def _has_tau() -> bool:
    from importlib.util import find_spec

    return find_spec("tau_trait") is not None


@pytest.mark.slow
@pytest.mark.parametrize("pack", PACKS)
@pytest.mark.parametrize("policy", IN_PROCESS)
def test_each_hostile_agent_scores_at_or_below_the_floor(
    scores: dict[tuple[str, str], object], pack: str, policy: str
) -> None:
    summary = scores[pack, policy]
    figures = summary.domains[pack]  # type: ignore[attr-defined]
    headline = summary.headline.pass_hat  # type: ignore[attr-defined]  # unscored trials as failures
    assert headline[1] <= _floor(summary, pack) + 0.02, (policy, headline)  # (a crasher's run stops)
    assert headline[TRIALS] <= _floor(summary, pack) + 0.02
    assert figures.end_reasons.get("harness_error", 0) == 0, figures.end_reasons  # no re-roll
    assert getattr(figures, "lost_trials", 0) == 0
    assert os.getpriority(os.PRIO_PROCESS, os.getpid()) == 0  # castbench not reniced
    assert os.sched_getscheduler(os.getpid()) == os.SCHED_OTHER


@pytest.mark.parametrize("pack", PACKS)
def test_a_namespace_package_merging_with_kept_tau_tasks_is_refused(
    pack: str, team: Path, tmp_path: Path
) -> None:
    """`playbook.agents:Merged` (a namespace package) beside a clone's `playbook/` folder that
    holds the tasks as castbench keeps them derived, under an innocent name."""
    mine, clone = tmp_path / "mine", tmp_path / "clone"
    (mine / "playbook").mkdir(parents=True)
    shutil.copy(team / f"{MODULE}.py", mine / "playbook" / "agents.py")
    (clone / "playbook").mkdir(parents=True)
    tasks = [task.model_dump(mode="json") for task in load_domain(pack).tasks("test")]
    (clone / "playbook" / "notes.txt").write_text(json.dumps({"tasks": {"test": tasks}}))
    sys.path[:0] = [str(mine), str(clone)]
    try:
        with pytest.raises(sandbox.AgentPackageError, match="task data"):
            _run(pack, "playbook.agents:Merged", tmp_path / "runs.db")
    finally:
        sys.path.remove(str(mine))
        sys.path.remove(str(clone))
        for module in [m for m in sys.modules if m == "playbook" or m.startswith("playbook.")]:
            del sys.modules[module]


@pytest.mark.parametrize("pack", PACKS)
def test_start_up_hooks_in_an_agent_folder_never_run_and_gain_nothing(
    pack: str, team: Path, tmp_path: Path
) -> None:
    """`castbench eval --agent-path TEAM` with a sitecustomize, a usercustomize, a `.pth` and
    modules named as a start-up might import them in TEAM: none runs (anywhere the tasks can
    be read), and the agent that looks for their loot refuses as the floor does. Put on
    `PYTHONPATH` instead, castbench refuses to start."""
    mark = tmp_path / "mark"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CASTBENCH_"))}
    env.update(TEAM56_MARK=str(mark), HOME=str(tmp_path))
    command = [
        sys.executable, "-c", "from castbench._cli.app import main; main()",
        "eval", "--agent-path", str(team),
        "--domain", pack, "--tasks", ",".join(_tasks(pack)), "--trials", str(TRIALS),
        "--policy", f"{MODULE}:StartupHooked", "--db", str(tmp_path / "runs.db"),
        "--output", str(tmp_path / "s.json"),
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not mark.exists() and not (team / "loot").exists() and not (tmp_path / "loot").exists()
    summary = json.loads((tmp_path / "s.json").read_text())
    floors = summary["floors"]["domains"][pack]
    floor = max(floors["refuse"]["1"], floors["lookup-refuse"]["1"])
    assert summary["domains"][pack]["pass_hat"]["1"] <= floor + 0.02
    refused = subprocess.run(
        command,
        env={**env, "PYTHONPATH": str(team)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert refused.returncode == 5 and refused.stderr.startswith("error: "), refused.stderr[-500:]
    assert not mark.exists()


# -- route 4's class: no channel from one trial to the next ------------------------------------------------


@pytest.mark.parametrize("pack", PACKS)
@pytest.mark.parametrize("how", ["shm", "msgq", "sem", "keyring", "netlink", "memfd"])
def test_no_kernel_object_carries_anything_from_one_trial_to_the_next(
    team: Path, pack: str, how: str
) -> None:
    """System V shared memory, message queues and semaphores, the kernel's keyrings (a trial's
    user id comes back once PIDs wrap), netlink between processes, files in memory no bound
    counts: each trial is refused them, so nothing a trial leaves there reaches the next."""
    replies = [first_reply(f"{MODULE}:Rememberer?how={how}", pack) for _ in range(2)]
    assert all(reply.startswith("DENIED") and "TEAM56-" not in reply for reply in replies), replies


# -- route 7's class: the judge reads the agent's text as material, never as its prompt -------------------


@pytest.mark.parametrize("pack", PACKS)
def test_replies_written_to_address_the_judge_gain_nothing_on_the_pack(
    pack: str, team: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pack's tasks that ask for information and change nothing (their pass rests on the
        reply checks), judged by a model that obeys its prompt's lines (`test_judge_injection.py`):
        each phrasing in `hostile.INJECTION_NAMES` scores as its honest twin (the same refusal, no
        injection). With the prompt pasted as before issue 56, an injection wins on `tau-retail`: the
    test can fail."""
    from castbench._agents.models import reply_judge
    from tests.models.fault_server import FaultServer
    from tests.sandbox.hostile import INJECTION_NAMES
    from tests.sandbox.test_judge_injection import _legacy, _respond

    tasks = [t.id for t in load_domain(pack).tasks("test") if t.required_outputs and t.outcome != "change"][
        :2
    ]
    db = sqlite_url(tmp_path / "judged.db")

    def score(policy: str) -> float:
        result = evaluate(
            domains=pack, policy=policy, trials=1, tasks=tasks, db=db, fresh=True, reply_judge=judge
        )
        return float(result.summary.headline.pass_hat[1])

    with FaultServer(_respond) as server:
        judge = f"openai/judge?api_base={server.base_url}"
        honest = score(f"{MODULE}:Cheater")
        scores = {how: score(f"{MODULE}:Injector?how={how}") for how in INJECTION_NAMES}
        assert all(value <= honest for value in scores.values()), (honest, scores)
        monkeypatch.setattr(reply_judge, "render", _legacy)
        fooled = score(f"{MODULE}:Injector?how=vertical-tab")
    if pack == "tau-retail":  # (retail's information tasks also ask for the look-ups: no reply alone passes)
        assert fooled > honest, (fooled, honest)


# -- route 8's class: bounds reached by other means --------------------------------------------------------


@pytest.mark.parametrize("pack", PACKS)
@pytest.mark.parametrize(
    ("how", "amount"), [("mmap", 1500), ("spawn", 64), ("fallocate", 16)], ids=["mmap", "spawn", "fallocate"]
)
def test_a_trial_past_a_bound_by_another_means_fails_as_the_agent(
    team: Path, pack: str, how: str, amount: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from castbench.agents import confine

    monkeypatch.setenv(confine.LIMITS_ENV, "memory=1G,file=4M,processes=24,cpu=5")
    reply = first_reply(f"{MODULE}:Hog?how={how}&amount={amount}", pack)
    assert reply.startswith("DENIED"), reply
    assert first_reply(f"{MODULE}:Hog?how={how}&amount={amount // 8}", pack).startswith("GOT")  # within
