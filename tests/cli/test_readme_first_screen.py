"""The README's "What the first command prints at 80 columns" is what the quick start's first
command prints: `castbench eval` on the offline defaults, in an empty folder, at COLUMNS=80, every
figure, interval and the run id as the README shows them (the progress bar aside, whose timings
vary), word for word: on a terminal the provenance lines wrap between words, where a pipe gets
them whole, and rich pads table rows with spaces the README does not keep, so what is compared is
the words in order. It is the first thing a newcomer compares."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 80


def _words(text: str) -> list[str]:
    """The words printed, in order, the progress bar's line left out (its times vary)."""
    return [word for line in text.splitlines() if not line.startswith("trials ━") for word in line.split()]


@pytest.mark.slow
def test_the_readme_first_screen_is_what_eval_prints(tmp_path: Path, repo_env: dict[str, str]) -> None:
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1]
    command = re.search(r"```bash\n(.*?)\n```", quick_start, re.DOTALL)
    assert command and command.group(1).endswith("&& .venv/bin/castbench eval"), "the first command changed"
    printed = quick_start.split("What the first command prints", 1)[1]
    screen = re.search(r"```text\n(.*?)```", printed, re.DOTALL)
    assert screen, "the README lost what the first command prints"
    (tmp_path / "results").mkdir()  # the default store's folder, as in a checkout
    castbench = str(Path(sys.executable).parent / "castbench")
    env = {**repo_env, "COLUMNS": str(WIDTH)}
    done = subprocess.run(
        [castbench, "eval"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=500
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _words(done.stdout) == _words(screen.group(1))
    assert all(len(line) <= WIDTH for line in screen.group(1).splitlines()), "the README's screen is wider"
