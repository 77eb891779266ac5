"""Per-trial harness overhead on the τ² packs: τ²'s own harness against castbench's, side by side.

    pip install -e '.[tau2]'
    python bench/tau2_speed.py                                  # tau2-retail and tau2-airline test
    python bench/tau2_speed.py --domains tau2-retail --tasks 12

Both sides run the same trajectory per task (its gold calls, then a message that says the
required outputs) with no model: a replaying agent and a stub user, so what is timed is the
harness. τ²: a fresh environment, `get_response` per call, `evaluate_simulation` (as its
orchestrator and runner do per simulation; `Tau2Reference.own_trial`). castbench: `run_trial`
(sandbox, tools, conversation records, grading); the expected state is replayed once per task
and shared by its trials, so it is reported apart and also charged in full to a single trial
(`n=1`, the worst case). Timings interleave the two sides task by task, so machine load hits
both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench.domain import load_domain  # noqa: E402
from castbench_authoring.parity import castbench_trial, gold_trajectory  # noqa: E402
from castbench_tau2.domain import Tau2Domain  # noqa: E402
from castbench_tau2.parity import Tau2Reference  # noqa: E402


def run_pack(name: str, split: str, limit: int | None, repeats: int) -> float:
    domain = load_domain(name)
    assert isinstance(domain, Tau2Domain)
    reference = Tau2Reference(domain)
    tasks = domain.tasks(split)[:limit] if limit else domain.tasks(split)
    theirs_s: list[float] = []
    ours_s: list[float] = []
    expected_s: list[float] = []
    for task in tasks:
        trajectory = gold_trajectory(task)
        start = time.perf_counter()
        expected = domain.replay(task)
        expected_s.append(time.perf_counter() - start)
        for _ in range(repeats):
            start = time.perf_counter()
            record = castbench_trial(domain, task, trajectory, expected)
            ours_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            reference.own_trial(record)
            theirs_s.append(time.perf_counter() - start)
    theirs, ours, replay = statistics.mean(theirs_s), statistics.mean(ours_s), statistics.mean(expected_s)
    print(
        f"{name} {split}: {len(tasks)} tasks x {repeats}: τ² {theirs * 1000:.1f} ms/trial, castbench "
        f"{ours * 1000:.2f} ms/trial (+ {replay * 1000:.2f} ms per task for the expected state); "
        f"ratio {theirs / ours:.0f}x per trial, {theirs / (ours + replay):.0f}x at n=1, "
        f"{theirs / (ours + replay / 4):.0f}x at n=4",
        flush=True,
    )
    return theirs / (ours + replay)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--domains", default="tau2-retail,tau2-airline")
    parser.add_argument("--split", default="test")
    parser.add_argument("--tasks", type=int, default=None, help="first N tasks of the split (default all)")
    parser.add_argument("--repeats", type=int, default=1, help="trials per task on each side")
    args = parser.parse_args()
    worst = min(
        run_pack(name.strip(), args.split, args.tasks, args.repeats) for name in args.domains.split(",")
    )
    print(f"smallest ratio at n=1: {worst:.0f}x (goal: 50x)")
    return 0 if worst >= 50 else 1


if __name__ == "__main__":
    sys.exit(main())
