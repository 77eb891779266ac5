"""Install llama-cpp-python (the `llamacpp` extra's server) built portably, building it at most once
per machine.

llama-cpp-python has no wheel on PyPI, so pip compiles it: 7-13 minutes on 2 cores. By default
the build targets the build machine's own CPU (`GGML_NATIVE`), and such a build dies with SIGILL on
machines without that CPU's extensions (AMX, AVX-512; `tests/models/test_llamacpp_build.py`). So it
is built with the flags below. pip's own wheel cache cannot be trusted with that: it keys a built
wheel by the source archive alone, never by the build flags (pypa/pip#11164), and hands a native
wheel built earlier to a portable install. This script keeps its own cache instead, keyed by the
version, the flags, the Python and the platform: the first install on a machine compiles, every
later one (a fresh clone, a new virtual environment, CI) installs the same portable wheel in
seconds.

    .venv/bin/python scripts/install_llama_cpp.py          # into the interpreter that runs it

`CASTBENCH_WHEEL_CACHE` moves the cache (default `$XDG_CACHE_HOME/castbench/wheels`, else
`~/.cache/castbench/wheels`); `--rebuild` ignores what is there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

PACKAGE, VERSION, EXTRAS = "llama-cpp-python", "0.3.36", "server"
PORTABLE = (
    "-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF "
    "-DLLAVA_BUILD=OFF"
)
"""The x86-64-v3 baseline (AVX2/FMA/F16C) and nothing past it; without the multimodal library,
since castbench's agents read and write text only."""


def cache_root() -> Path:
    configured = os.environ.get("CASTBENCH_WHEEL_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "castbench" / "wheels"


def cache_key() -> str:
    """What a built wheel depends on that pip does not look at."""
    parts = [
        PACKAGE,
        VERSION,
        PORTABLE,
        sys.implementation.cache_tag or "",
        platform.machine(),
        "-".join(platform.libc_ver()),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def pip(*arguments: str, env: dict[str, str] | None = None) -> int:
    return subprocess.call([sys.executable, "-m", "pip", *arguments], env=env)


def build(into: Path) -> Path:
    """Compile the wheel portably into a fresh folder, then move it into `into` whole, so an
    interrupted build leaves nothing a later install would take for a wheel."""
    print(f"building {PACKAGE}=={VERSION} portably (minutes; once per machine) ...", flush=True)
    into.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=into.parent, prefix=".building-"))
    scratch.chmod(0o755)  # the cache is readable like pip's, not private like a temporary folder
    try:
        env = {**os.environ, "CMAKE_ARGS": PORTABLE}
        requirement = f"{PACKAGE}=={VERSION}"
        status = pip("wheel", "--no-deps", "--no-cache-dir", "-q", "-w", str(scratch), requirement, env=env)
        if status != 0:
            raise SystemExit(f"error: building {PACKAGE}=={VERSION} failed (pip exit {status})")
        shutil.rmtree(into, ignore_errors=True)
        os.replace(scratch, into)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return wheel_in(into)


def wheel_in(folder: Path) -> Path:
    wheels = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    if len(wheels) != 1:
        raise FileNotFoundError(folder)
    return wheels[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rebuild", action="store_true", help="compile again, ignoring the cached wheel")
    rebuild = parser.parse_args().rebuild
    folder = cache_root() / f"{PACKAGE}-{VERSION}-{cache_key()}"
    try:
        wheel = build(folder) if rebuild else wheel_in(folder)
    except FileNotFoundError:
        wheel = build(folder)
    else:
        print(f"using the portable {PACKAGE} wheel built before: {wheel}", flush=True)
    # pip takes an installed llama-cpp-python of the same version for this one, even a native
    # build: replace it unless it came from this very wheel, then add the server's dependencies
    replace = [] if installed_from() == wheel.as_uri() else ["--force-reinstall", "--no-deps"]
    steps = [[*replace, str(wheel)], [f"{PACKAGE}[{EXTRAS}] @ {wheel.as_uri()}"]]
    if any(pip("install", "-q", *step) != 0 for step in steps):
        raise SystemExit(f"error: installing {wheel} failed; run again with --rebuild")


def installed_from() -> str | None:
    """Where this interpreter's llama-cpp-python was installed from (pip's `direct_url.json`)."""
    try:
        recorded = metadata.distribution(PACKAGE).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    return str(json.loads(recorded).get("url")) if recorded else None


if __name__ == "__main__":
    main()
