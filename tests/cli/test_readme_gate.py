"""The README's "Gate a change in CI" example is true: its three commands, run as written in an
empty folder, exit 1 (credibly worse) and print the verdict the README shows at 80 columns, run ids
aside. A newcomer copies this block into a CI job first; if the gate's output or its exit code
changes, the README must change with it."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN_ID = re.compile(r"r-[0-9a-f]{12}")


def _example() -> tuple[list[str], str]:
    section = (ROOT / "README.md").read_text().split("## Gate a change in CI", 1)[1].split("\n## ", 1)[0]
    commands = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    printed = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert commands and printed, "the README's gate example lost its commands or what they print"
    return [line.split("  #")[0].strip() for line in commands.group(1).splitlines()], printed.group(1)


@pytest.mark.slow
def test_the_readme_gate_example_prints_what_it_shows(tmp_path: Path, repo_env: dict[str, str]) -> None:
    commands, printed = _example()
    verbs = [command.split()[:2] for command in commands]
    assert verbs == [["castbench", "eval"], ["castbench", "eval"], ["castbench", "gate"]], verbs
    (tmp_path / "results").mkdir()  # the default store's folder, as in a checkout
    env = {**repo_env, "COLUMNS": "80"}
    castbench = str(Path(sys.executable).parent / "castbench")
    done = []
    for command in commands:
        argv = [castbench, *shlex.split(command)[1:]]
        done.append(subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300))
    assert [run.returncode for run in done] == [0, 0, 1], [run.stdout + run.stderr for run in done]
    assert RUN_ID.sub("r-…", done[2].stdout) == RUN_ID.sub("r-…", printed)
