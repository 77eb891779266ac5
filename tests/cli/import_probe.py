"""Run a `castbench` command in a fresh interpreter and report which heavy packages it imported
(used by `test_cli_lazy.py` and `bench/startup.py`)."""

from __future__ import annotations

import json
import subprocess
import sys

__all__ = ["HEAVY", "RUN_COMMAND", "loaded", "probe"]

HEAVY = (
    *("litellm", "openai", "aiohttp", "uvloop", "httpx"),  # model clients
    *("pandas", "scipy", "numpy", "jinja2"),
    *("sqlalchemy", "sqlmodel", "psycopg"),  # the store; psycopg for postgresql:// only
    "ray",
)

RUN_COMMAND = """
import json, sys
from castbench._cli.app import main
sys.argv = ["castbench", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
"""
_REPORT = "\nprint('LOADED=' + json.dumps(sorted(name for name in %r if name in sys.modules)))\n"


def probe(
    code: str,
    args: list[str],
    env: dict[str, str],
    cwd: str,
    flags: tuple[str, ...] = (),
    modules: tuple[str, ...] = HEAVY,
) -> subprocess.CompletedProcess[str]:
    """Run `code` (which reads its arguments from `sys.argv[1]`, JSON) and report which of
    `modules` (the heavy packages unless told) it left in `sys.modules` on a `LOADED=` line."""
    return subprocess.run(
        [sys.executable, *flags, "-c", "import json, sys\n" + code + _REPORT % (modules,), json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def loaded(result: subprocess.CompletedProcess[str]) -> list[str]:
    line = next((line for line in result.stdout.splitlines() if line.startswith("LOADED=")), None)
    if line is None:
        raise RuntimeError(result.stdout[-2000:] + result.stderr[-2000:])
    return list(json.loads(line.removeprefix("LOADED=")))
