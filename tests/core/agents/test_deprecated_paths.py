"""An agent written against the old import path still imports, told where the names went."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import castbench.agents


def test_the_old_conversation_path_imports_with_a_warning_naming_the_new_place() -> None:
    sys.modules.pop("castbench.agents.conversation", None)
    with pytest.warns(DeprecationWarning, match=r"import from castbench\.agents instead"):
        old = importlib.import_module("castbench.agents.conversation")
    for name in old.__all__:
        assert getattr(old, name) is getattr(castbench.agents, name), name


def test_an_agent_module_on_the_old_path_runs() -> None:
    """A fresh interpreter, as an agent's worker process imports it: the names resolve, and the
    warning (shown by default for an import from `__main__`) says where they went."""
    code = "from castbench.agents.conversation import ReplyAction\nprint(ReplyAction(text='hi').text)\n"
    done = subprocess.run(
        [sys.executable, "-W", "default::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "hi"
    assert "castbench.agents.conversation is deprecated" in done.stderr
    assert "import from castbench.agents instead" in done.stderr
