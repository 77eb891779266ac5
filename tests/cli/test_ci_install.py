"""docs/ci.md's install works without a package index: the wheel its command builds, in a fresh
virtual environment as written, holds the harness, the domains and their data, and an evaluation
runs from that wheel alone (it said `pip install castbench`, which no index serves; then a
`--no-build-isolation` build that a fresh venv's setuptools cannot do)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ci.md"


def _install_block() -> list[str]:
    match = re.search(r"```sh\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert match, "docs/ci.md has no ```sh block with the wheel's commands"
    return [line for line in match.group(1).splitlines() if line and not line.startswith("#")]


def _offline_index(folder: Path) -> Path:
    """The build requirements of pyproject.toml as wheels repacked from this environment's own
    installs: what the index would serve pip for the build, without a network."""
    import importlib.metadata

    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    site = Path(sysconfig.get_paths()["purelib"])
    for requirement in requires:
        name = re.split(r"[<>=!~\[ ]", requirement, maxsplit=1)[0]
        dist = importlib.metadata.distribution(name)
        unpacked = folder / "unpacked" / name
        for file in dist.files or []:
            source = site / file
            if str(file).startswith("..") or "__pycache__" in str(file) or not source.is_file():
                continue
            (unpacked / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, unpacked / file)
        subprocess.run(
            [sys.executable, "-m", "wheel", "pack", str(unpacked), "-d", str(folder)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    return folder


def test_the_documented_wheel_builds_and_runs_an_evaluation(tmp_path: Path) -> None:
    build, install = _install_block()
    assert build.startswith("pip wheel --no-deps -w ci/ ")
    assert install.startswith("pip install ci/castbench-")
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    links = _offline_index(tmp_path / "links")
    out = tmp_path / "ci"
    # the documented command as written, in the fresh venv; offline: the index is the folder above
    argv = [str(venv / "bin" / "python"), "-m", *build.split()[:-3], "-w", str(out), str(ROOT)]
    argv += ["--no-index", "--find-links", str(links)]
    built = subprocess.run(argv, capture_output=True, text=True, timeout=600, env={"PATH": "/usr/bin:/bin"})
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = out.glob("castbench-*-py3-none-any.whl")
    assert install.split()[-1] == f"ci/{wheel.name}"
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    # the wheel alone: no site processing, so this checkout's editable install is not on the path;
    # the dependencies come from the environment's site-packages, as pip would install them
    dependencies = sysconfig.get_paths()["purelib"]
    code = (
        "import sys, castbench; print(castbench.__file__)\n"
        "from castbench._cli.app import main\n"
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
