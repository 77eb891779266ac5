"""What a fresh process per trial adds to the whole command, in CPU per trial (#59):

    python bench/fresh_process.py [--trials 2] [--rounds 3] [--domain retail]

The same `castbench eval` of a two-step import-path policy (`bench/agents/two_step.py`: one
look-up, then the closing question) over the domain's test tasks, run two ways as a user types
it, each a fresh `castbench` process on a fresh run (`--fresh`):

- default: the policy in a fresh sandboxed process per trial, forked from a worker that never
  imported it (docs/sandbox.md);
- `--in-process`: the policy inside castbench's own process (debugging; no isolation).

CPU is user + system of the command and every process it started (workers, their trials'
processes), from `getrusage` of the reaped children; the two forms alternate round by round so
that machine load hits both alike, and the load average is printed beside the figures. Added per
trial = (default - in-process) / trials: start-up of the worker (and of its probe) included,
spread over the run's trials. Goal (#59): under 5 ms of CPU per trial. Results go to a temporary
database. No asserts: it reports (exit 1 when the goal is not met).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASTBENCH = str(Path(sys.executable).with_name("castbench"))
POLICY = "bench.agents.two_step:TwoStepPolicy"
GOAL_MS = 5.0


def _cpu(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    """CPU seconds of one `castbench` command and everything it started; its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([CASTBENCH, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"error: castbench {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=2, help="trials per task")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--domain", default="retail")
    options = parser.parse_args()
    # the checkout's root on the path: where `bench.agents.two_step` is found, in castbench's
    # process (`--in-process`) and in the workers alike (castbench accepts exactly this entry)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as scratch:
        db = f"sqlite:///{Path(scratch) / 'fresh.db'}"
        run = ["eval", "--domain", options.domain, "--policy", POLICY, "--trials", str(options.trials)]
        run += ["--db", db, "--fresh"]
        forms = {"fresh process per trial": run, "--in-process": [*run, "--in-process"]}
        _, shown = _cpu(forms["fresh process per trial"], env)  # untimed: bytecode, page cache
        trials = next(
            int(line.split()[0]) for line in shown.splitlines() if " trials, " in line and line[0].isdigit()
        )
        if "trial isolation: process per trial" not in shown:
            sys.exit("error: the default run did not give each trial a process of its own:\n" + shown[-2000:])
        _cpu(forms["--in-process"], env)
        times: dict[str, list[float]] = {form: [] for form in forms}
        loads = [os.getloadavg()[0]]
        for _ in range(options.rounds):  # round by round: load hits both alike
            for form, args in forms.items():
                times[form].append(_cpu(args, env)[0])
            loads.append(os.getloadavg()[0])
    print(
        f"{options.domain}, {POLICY} ({trials} trials a command), CPU of the whole command, "
        f"median of {options.rounds} rounds, load {min(loads):.1f}-{max(loads):.1f}, {os.cpu_count()} CPUs"
    )
    print(f"{'':28} {'CPU s':>7} {'ms/trial':>9}")
    medians = {form: statistics.median(values) for form, values in times.items()}
    for form, seconds in medians.items():
        print(f"{form:28} {seconds:7.2f} {1000 * seconds / trials:9.2f}")
    added = 1000 * (medians["fresh process per trial"] - medians["--in-process"]) / trials
    pairs = [1000 * (a - b) / trials for a, b in zip(*times.values(), strict=True)]
    met = added < GOAL_MS
    print(f"added per trial: {added:.2f} ms (rounds {min(pairs):.2f}-{max(pairs):.2f})")
    print(f"goal: under {GOAL_MS} ms of CPU added per trial: {'met' if met else 'NOT MET'}")
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
