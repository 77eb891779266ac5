"""docs/ci.md's install works without a package index: the wheel its command builds holds the
harness, the domains and their data, and an evaluation runs from that wheel alone (it said
`pip install castbench`, which no index serves)."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ci.md"


def _install_block() -> list[str]:
    match = re.search(r"```sh\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert match, "docs/ci.md has no ```sh block with the wheel's commands"
    return [line for line in match.group(1).splitlines() if line and not line.startswith("#")]


def test_the_documented_wheel_builds_and_runs_an_evaluation(tmp_path: Path) -> None:
    build, install = _install_block()
    assert build.startswith("pip wheel --no-deps --no-build-isolation -w ci/ ")
    assert install.startswith("pip install ci/castbench-")
    out = tmp_path / "ci"
    argv = [sys.executable, "-m", *build.split()[:-3], "-w", str(out), str(ROOT)]
    subprocess.run(argv, check=True, capture_output=True, timeout=600)
    (wheel,) = out.glob("castbench-*-py3-none-any.whl")
    assert install.split()[-1] == f"ci/{wheel.name}"
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    # the wheel alone: no site processing, so this checkout's editable install is not on the path;
    # the dependencies come from the environment's site-packages, as pip would install them
    dependencies = sysconfig.get_paths()["purelib"]
    code = (
        "import sys, castbench; print(castbench.__file__)\n"
        "from castbench.cli.app import main\n"
        f"sys.argv = ['castbench', 'eval', '--domain', 'retail', '--tasks', 'retail-test-0001', "
        f"'--trials', '1', '--db', {str(tmp_path / 'r.db')!r}]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={"PYTHONPATH": f"{unpacked}:{dependencies}", "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith(str(unpacked))
    assert "pass^1" in done.stdout
