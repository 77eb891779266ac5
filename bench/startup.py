"""Start-up cost of the command line: `python bench/startup.py [--repeat 5]`.

For each command it runs a fresh interpreter with `-X importtime`, runs the command in it and
prints the import time (the sum of every module's own import time, as Python measures it), the
heavy packages it loaded and the whole process's wall time; the median of `--repeat` runs, and
the least import time of them (on a shared machine, the run the others' load disturbed least).
The last row imports every command module at once: what `castbench --help` cost when the command
line loaded them all eagerly. Results go to a temporary database. No asserts: it reports.

Modules are timed as an installed castbench runs them, from their cached bytecode: each command
runs once untimed first, with bytecode writing allowed even where `PYTHONDONTWRITEBYTECODE` is
set (some sandboxes set it; there an editable install compiles castbench's own modules on every
run, which is not start-up cost a user pays).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from castbench._cli.app import COMMANDS  # noqa: E402
from tests.cli.import_probe import RUN_COMMAND, loaded, probe  # noqa: E402

_EAGER = "".join(sorted({f"import {entry.target.split(':')[0]}\n" for entry in COMMANDS.values()}))


def _measure(code: str, args: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, list[str]]:
    """(import seconds, wall seconds, heavy packages loaded) of one fresh interpreter."""
    started = time.perf_counter()
    result = probe(code, args, env, cwd, flags=("-X", "importtime"))
    wall = time.perf_counter() - started
    imports_us = 0
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            imports_us += int(line.split(":", 1)[1].split("|")[0])
    return imports_us / 1e6, wall, loaded(result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "120"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as scratch:
        db = f"sqlite:///{Path(scratch) / 'startup.db'}"
        cases = [
            ("castbench --help", RUN_COMMAND, ["--help"]),
            ("castbench eval --help", RUN_COMMAND, ["eval", "--help"]),
            (
                "castbench eval (oracle, 1 trial)",
                RUN_COMMAND,
                ["eval", "--domain", "retail", "--tasks", "retail-test-0001", "--policy", "oracle"]
                + ["--trials", "1", "--fresh", "--db", db],
            ),
            ("every command module (the old eager CLI)", _EAGER, []),
        ]
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
            f"median of {options.repeat} runs (bytecode cached)"
        )
        print(f"{'command':44} {'imports s':>10} {'least':>6} {'wall s':>8}  heavy packages loaded")
        for label, code, args in cases:
            _measure(code, args, env, scratch)  # untimed: writes the bytecode cache
            runs = [_measure(code, args, env, scratch) for _ in range(options.repeat)]
            imports = statistics.median(run[0] for run in runs)
            least = min(run[0] for run in runs)
            wall = statistics.median(run[1] for run in runs)
            print(f"{label:44} {imports:10.3f} {least:6.3f} {wall:8.3f}  {', '.join(runs[-1][2]) or '-'}")


if __name__ == "__main__":
    main()
