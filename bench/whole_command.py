"""The harness overhead a user waits for: whole `castbench eval` commands against τ's own harness.

    python bench/whole_command.py                 # retail oracle x 8 trials; 40 τ retail tasks
    python bench/whole_command.py --tau-tasks 115 --trials 8
    python bench/whole_command.py --domain tau-retail   # like for like: τ's own data and tasks

castbench's side is the command a user types, `castbench eval --domain retail --policy oracle
--trials 8` (strict grading on: the labeler runs on every action), timed as a whole process,
start-up, summary and reference floors included, in three forms:

- cold: a fresh database (the floors run three floor policies over the tasks, once);
- warm: `--fresh` on that database, a new run whose floors are read back from the store (a
  second agent, or a re-run, on the same tasks);
- resume: the same command again, on the complete run: nothing to run (the output must say
  `0 trials run`; goal < 2 s).

τ's side is τ's own environment replaying its retail test tasks (`env.reset`, `env.step` per
gold action, `calculate_reward`: what its `run.py` does per trial) with no model, timed per
trial in this process. The two sides interleave (τ, cold, τ, warm, resume) so that machine load
hits both alike; the load average is printed. Ratio = τ's time per trial / castbench's whole
command per trial (goal >= 300x on native retail; with `--domain tau-retail`, castbench's pack of
τ's own retail data and tasks, the same work as τ's side, >= 150x, #59). CPU seconds of each
command are printed too: on a machine shared with other work, they say what the command itself
cost.

Results go to a temporary database. No asserts: it reports (exit 1 when a goal is not met).
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

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench.domain import load_domain  # noqa: E402
from castbench_tau.domain import TauDomain  # noqa: E402
from castbench_tau.parity import TauReference  # noqa: E402

try:  # where the τ packs' parity helpers live (moved into castbench's runner for the τ² packs)
    from castbench_authoring.parity import gold_trajectory  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    from castbench_tau.parity import gold_trajectory  # type: ignore[no-redef, attr-defined, unused-ignore]

CASTBENCH = str(Path(sys.executable).with_name("castbench"))


def tau_per_trial(tasks: int, offset: int) -> tuple[float, float]:
    """(wall, CPU) seconds per trial of τ's own retail environment over `tasks` test tasks from
    `offset`."""
    domain = load_domain("tau-retail")
    assert isinstance(domain, TauDomain)
    reference = TauReference(domain)
    chosen = domain.tasks("test")[offset : offset + tasks]
    wall, cpu = 0.0, 0.0
    for task in chosen:
        trajectory = gold_trajectory(task)
        _, index = domain.locate(task.id)
        start, started_cpu = time.perf_counter(), time.process_time()
        reference.run("test", index, trajectory)
        wall += time.perf_counter() - start
        cpu += time.process_time() - started_cpu
    return wall / len(chosen), cpu / len(chosen)


def command(args: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, output) of one castbench process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [CASTBENCH, *args], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"error: castbench {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--tau-tasks", type=int, default=40, help="τ retail test tasks timed (two halves)")
    parser.add_argument("--domain", default="retail", help="castbench's side: retail or tau-retail")
    options = parser.parse_args()
    goal = 150 if options.domain == "tau-retail" else 300
    tasks = len(load_domain(options.domain).tasks("test"))
    trials = tasks * options.trials
    half = max(1, options.tau_tasks // 2)
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; castbench {options.domain} oracle: "
        f"{tasks} tasks x "
        f"{options.trials} trials = {trials}; τ: {2 * half} retail test tasks",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="castbench-whole-") as scratch:
        db = f"sqlite:///{Path(scratch) / 'runs.db'}"
        base = ["eval", "--domain", options.domain, "--policy", "oracle", "--trials", str(options.trials)]
        base += ["--db", db]
        command(["domains", "list"])  # the page cache warm for both sides' imports
        tau = [tau_per_trial(half, 0)]
        cold = command(base)
        tau.append(tau_per_trial(half, half))
        warm = command([*base, "--fresh"])
        resume = command(base)
    tau_s = statistics.mean(wall for wall, _ in tau)
    tau_cpu = statistics.mean(cpu for _, cpu in tau)
    print(f"load now {os.getloadavg()[0]:.1f}")
    halves = " / ".join(f"{wall * 1000:.1f}" for wall, _ in tau)
    print(f"τ's environment: {tau_s * 1000:.1f} ms per trial (halves {halves}; {tau_cpu * 1000:.1f} ms CPU)")
    ratios = {}
    for label, (wall, cpu, _) in (("cold (floors computed)", cold), ("warm (floors from the store)", warm)):
        per_trial = wall / trials
        ratios[label] = tau_s / per_trial
        print(
            f"castbench {label}: {wall:.2f} s wall ({cpu:.2f} s CPU) = {per_trial * 1000:.2f} ms per trial; "
            f"ratio {ratios[label]:.0f}x (CPU against CPU: {tau_cpu / (cpu / trials):.0f}x)"
        )
    wall, cpu, output = resume
    ran_nothing = "(0 trials run," in output
    print(
        f"resume of the complete run: {wall:.2f} s wall ({cpu:.2f} s CPU); "
        f"{'ran no trial' if ran_nothing else 'RAN TRIALS'}"
    )
    goals = [
        (f"whole command >= {goal}x τ (warm)", ratios["warm (floors from the store)"] >= goal),
        ("resume < 2 s and runs nothing", wall < 2 and ran_nothing),
    ]
    for label, met in goals:
        print(f"goal {label}: {'met' if met else 'NOT MET'}")
    return 0 if all(met for _, met in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
