"""Start-up cost of the command line: `python bench/startup.py [--repeat 5] [--trials 8]`.

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

A second table is the CPU (user + system, `getrusage` of the child) of whole commands as a user
types them, each a fresh `castbench` process, A and B alternating round by round so that load
hits every command alike, the load average beside: `castbench --help`, `castbench runs list`,
`castbench gate` (a run against itself) and `castbench eval` resuming a complete run (retail,
oracle, every test task x `--trials`, 960 trials at 8; made once, untimed, before). Goal (#59):
the resume under 0.5 s of CPU, on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
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


CASTBENCH = str(Path(sys.executable).with_name("castbench"))
RESUME_GOAL_S = 0.5


def _cpu(args: list[str], env: dict[str, str], cwd: str) -> float:
    """CPU seconds (user + system) of one `castbench` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([CASTBENCH, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"error: castbench {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def whole_commands(repeat: int, trials: int, env: dict[str, str], scratch: str) -> bool:
    """The CPU table; whether the resume met its goal."""
    db = f"sqlite:///{Path(scratch) / 'whole.db'}"
    run = ["eval", "--domain", "retail", "--policy", "oracle", "--trials", str(trials), "--db", db]
    _cpu(run, env, scratch)  # the complete run to resume (untimed)
    _cpu([*run, "--fresh"], env, scratch)  # a second run of it, the candidate of `gate` (untimed)
    listed = subprocess.run(
        [CASTBENCH, "runs", "list", "--db", db], capture_output=True, text=True, env=env, cwd=scratch
    ).stdout
    baseline, candidate = sorted(line.split()[0] for line in listed.splitlines() if line.startswith("r-"))
    cases = {
        "castbench --help": ["--help"],
        "castbench runs list": ["runs", "list", "--db", db],
        "castbench gate (two runs of the same tasks)": [
            "gate",
            "--baseline",
            baseline,
            "--candidate",
            candidate,
        ]
        + ["--metric", "pass^1", "--max-drop", "0.05", "--db", db],
        f"castbench eval resume (retail oracle, {trials} trials/task)": run,
    }
    for args in cases.values():
        _cpu(args, env, scratch)  # untimed: bytecode, page cache
    times: dict[str, list[float]] = {label: [] for label in cases}
    loads = [os.getloadavg()[0]]
    for _ in range(repeat):  # round by round: load hits every command alike
        for label, args in cases.items():
            times[label].append(_cpu(args, env, scratch))
        loads.append(os.getloadavg()[0])
    print(
        f"\nwhole commands, CPU seconds (user + system), median of {repeat} fresh processes, "
        f"load {min(loads):.1f}-{max(loads):.1f}"
    )
    print(f"{'command':60} {'CPU s':>7} {'least':>7}")
    for label, seconds in times.items():
        print(f"{label:60} {statistics.median(seconds):7.3f} {min(seconds):7.3f}")
    resume = statistics.median(times[list(cases)[-1]])
    met = resume < RESUME_GOAL_S
    print(f"goal: a resume of a complete run under {RESUME_GOAL_S} s CPU: {'met' if met else 'NOT MET'}")
    return met


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trials", type=int, default=8, help="trials per task of the run resumed")
    parser.add_argument("--only-cpu", action="store_true", help="the CPU table alone")
    options = parser.parse_args()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "120"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if options.only_cpu:
        with tempfile.TemporaryDirectory() as scratch:
            whole_commands(options.repeat, options.trials, env, scratch)
        return
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
        whole_commands(options.repeat, options.trials, env, scratch)


if __name__ == "__main__":
    main()
