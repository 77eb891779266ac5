"""An agent whose module loops (or blocks) at import ends as that agent's failure, named, after
the start limit (`CASTBENCH_AGENT_START_S`, 120 s by default): castbench is never held by it.
Refused up front when it loops from the start (a bad `--policy`, one `error:` line); a trial
whose import loops (the module changed since it was checked) fails as the agent's error."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from castbench._agents.paths import AGENT_PATH_ENV
from castbench._agents.registry import resolve
from castbench._agents.spec import AgentSpecError
from castbench._agents.transports import serve
from castbench._trial.rollout import AgentSet, run_trial
from castbench._trial.spec import TrialSpec
from castbench.domain import load_domain
from tests.sandbox.probing import kernel_support

pytestmark = pytest.mark.skipif(
    not kernel_support().available, reason=f"no sandbox here: {kernel_support().reason}"
)

REPO = Path(__file__).resolve().parents[2]

LOOPS = """
while True:  # an agent module that never finishes importing
    pass
"""

REPLIES = """
from castbench._base.conversation import ReplyAction


class Policy:
    def __init__(self, briefing):
        pass

    def propose(self, view):
        return ReplyAction(text="Hello.")
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    team = tmp_path / "team60"
    team.mkdir()
    monkeypatch.setenv(serve.START_ENV, "2")
    sys.path.insert(0, str(team))
    yield team
    sys.path.remove(str(team))


def test_an_agent_looping_at_import_is_refused_after_the_start_limit(folder: Path) -> None:
    (folder / "loops_at_import.py").write_text(LOOPS)
    began = time.monotonic()
    with pytest.raises(
        AgentSpecError, match=r"importing it did not finish within 2 s.*CASTBENCH_AGENT_START_S"
    ):
        resolve("policy", "loops_at_import:Policy")
    assert time.monotonic() - began < 30


def test_a_trial_whose_import_loops_fails_as_the_agent_s_error(folder: Path) -> None:
    module = folder / "loops_later.py"
    module.write_text(REPLIES)
    spec = resolve("policy", "loops_later:Policy")  # checked: it imports
    module.write_text(REPLIES + LOOPS)  # changed since: each trial imports it from its file
    os.utime(module, (time.time() + 5, time.time() + 5))
    domain = load_domain("retail")
    task = domain.tasks("test")[0]
    began = time.monotonic()
    agents = AgentSet(policy=spec, user=resolve("user", "scripted"))
    record = run_trial(TrialSpec(domain, task, 0, 1, agents, domain.replay(task)))
    assert time.monotonic() - began < 30
    assert record.end_reason == "agent_error" and record.status == "scored", record
    assert "importing it did not finish within 2 s" in (record.error or ""), record.error


def test_castbench_says_so_in_one_error_line(tmp_path: Path) -> None:
    team = tmp_path / "team60cli"
    team.mkdir()
    (team / "loops_cli.py").write_text(LOOPS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CASTBENCH_"))}
    env.update({AGENT_PATH_ENV: str(team), serve.START_ENV: "2"})
    command = [sys.executable, "-c", "from castbench._cli.app import main; main()"]
    args = ["eval", "-d", "retail", "--tasks", "retail-test-0001", "--trials", "1",
            "--policy", "loops_cli:Policy", "--db", f"sqlite:///{tmp_path / 'r.db'}"]  # fmt: skip
    done = subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
    lines = [
        line for line in done.stderr.splitlines() + done.stdout.splitlines() if line.startswith("error:")
    ]
    assert done.returncode != 0 and len(lines) == 1, (done.returncode, done.stdout, done.stderr)
    assert "did not finish within 2 s" in lines[0], lines
    bad = subprocess.run(
        [*command, *args],
        env={**env, serve.START_ENV: "soon"},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert (
        bad.returncode != 0 and "CASTBENCH_AGENT_START_S: 'soon' is not a number" in bad.stdout + bad.stderr
    )
