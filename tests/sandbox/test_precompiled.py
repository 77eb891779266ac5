"""The agent's modules compiled once per worker (`castbench._agents.precompiled`): each trial's
process imports them from the template's code, never a file changed since, never code it could
not read itself, never a domain package's."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from castbench._agents.precompiled import Precompiled
from castbench.agents import sandbox
from tests.sandbox.probing import first_reply, kernel_support

AGENT = """
from castbench._base.conversation import ReplyAction
import pc_helper


class Policy:
    def __init__(self, briefing):
        pass

    def propose(self, view):
        loaders = [type(module.__spec__.loader).__name__ for module in (pc_helper, __import__(__name__))]
        return ReplyAction(text=f"{pc_helper.WORD} {' '.join(loaders)}")
"""


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Path]:
    """An agent module and the helper module beside it that it imports, on `sys.path`."""
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "pc_agent.py").write_text(AGENT)
    (folder / "pc_helper.py").write_text("WORD = 'compiled-ahead'\n")
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    for name in ("pc_agent", "pc_helper"):
        sys.modules.pop(name, None)


def test_a_trial_imports_the_agent_and_its_helpers_from_the_worker_s_code(team: Path) -> None:
    assert first_reply("pc_agent:Policy") == "compiled-ahead _Loader _Loader"


def test_a_file_changed_since_is_compiled_by_the_import(team: Path) -> None:
    helper = team / "pc_helper.py"
    finder = Precompiled({"pc_helper": helper})
    spec = finder.find_spec("pc_helper")
    assert spec is not None and spec.origin == str(helper)
    helper.write_text("WORD = 'changed since the worker started'\n")
    assert finder.find_spec("pc_helper") is None


def test_a_domain_package_is_never_compiled_ahead(team: Path) -> None:
    modules = {"pc_helper": team / "pc_helper.py", "pc_agent": team / "pc_agent.py"}
    finder = Precompiled(modules, refused=["pc_helper"])
    assert finder.find_spec("pc_helper") is None
    assert finder.find_spec("pc_agent") is not None


@pytest.mark.skipif(not kernel_support().available, reason=f"no sandbox here: {kernel_support().reason}")
def test_code_the_sandbox_keeps_out_is_not_served(team: Path, tmp_path: Path) -> None:
    """A module compiled ahead whose file the trial may not read is not imported from that code."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "pc_secret.py").write_text("ANSWER = 'ground truth'\n")
    finder = Precompiled({"pc_secret": outside / "pc_secret.py", "pc_helper": team / "pc_helper.py"})
    plan = sandbox.plan("pc_agent:Policy")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            sandbox.enter(plan, str(scratch))
            served = [name for name in ("pc_secret", "pc_helper") if finder.find_spec(name) is not None]
            os.write(write_end, " ".join(served).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 1024).decode()
    os.waitpid(pid, 0)
    os.close(read_end)
    assert answer == "pc_helper"
