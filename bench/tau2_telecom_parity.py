"""Parity of `tau2-telecom` (dual control) with τ²'s own evaluator.

    pip install -e '.[tau2]'
    python bench/tau2_telecom_parity.py                       # small split: gold + 10 noisy seeds
    python bench/tau2_telecom_parity.py --split base --seeds 4 --json out.json
    python bench/tau2_telecom_parity.py --split full --seeds 1 --shard 0/10   # every 10th task

Telecom's gold trajectories need the *user* to act on their phone, so they cannot be replayed as
agent calls (`bench/tau2_parity.py`'s retail and airline way): each gold trajectory here is a
trial of castbench's oracle with the scripted user, who performs the gold's user-side actions
when told to; the perturbed ones are trials of the noisy policy (`scripted:noisy`: instructions
skipped, calls dropped or changed, seeded). Every trial (broken tasks included) is graded by
castbench (`tau` grading: τ²'s reward bases through `Tau2TelecomDomain.task_checks`) and, as τ²'s
`SimulationRun` (the user's calls as τ² `UserMessage`s with tool calls), by τ²'s
`evaluate_simulation`: τ² sets up the task's initial state, replays every call, agent's and
user's, raising if any answer differs from castbench's, and checks its assertions and actions.
It prints the agreement and every disagreement, and exits 1 on any.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench._agents.registry import resolve  # noqa: E402
from castbench._trial.rollout import AgentSet, Limits, TrialSpec, run_trial  # noqa: E402
from castbench.domain import load_domain  # noqa: E402
from castbench_tau2.parity import Tau2Reference  # noqa: E402
from castbench_tau2.telecom_domain import Tau2TelecomDomain  # noqa: E402


def run(split: str, seeds: int, noise: float, shard: tuple[int, int] = (0, 1)) -> dict[str, object]:
    """With `shard` (I, N) only every N-th task from the I-th (a sample of `full`'s 2,285)."""
    domain = load_domain("tau2-telecom")
    assert isinstance(domain, Tau2TelecomDomain)
    reference = Tau2Reference(domain)
    tasks = (domain.tasks(split) + domain.tasks(split + "-broken"))[shard[0] :: shard[1]]
    user = resolve("user", "scripted")
    policies = [("gold", 0, resolve("policy", "oracle"))] + [
        ("noisy", seed, resolve("policy", f"scripted:noisy?p={noise}")) for seed in range(seeds)
    ]
    agreed = {"gold": 0, "noisy": 0}
    total = {"gold": 0, "noisy": 0}
    passed = {"gold": 0, "noisy": 0}
    disagreements: list[dict[str, object]] = []
    started = time.perf_counter()
    for task in tasks:
        expected = domain.replay(task)
        for label, seed, policy in policies:
            agents = AgentSet(policy=policy, user=user)
            record = run_trial(TrialSpec(domain, task, 0, seed, agents, expected, Limits(), grading="tau"))
            ours = record.reward
            try:
                theirs: float | str = reference.reward(record)
            except Exception as exc:  # noqa: BLE001 - τ²'s replay raising is a disagreement, reported
                theirs = f"τ² raised: {exc}"
            total[label] += 1
            passed[label] += ours == 1.0
            if ours == theirs:
                agreed[label] += 1
            else:
                row = {"task": task.id, "kind": label, "seed": seed, "castbench": ours, "tau2": theirs}
                disagreements.append(row)
    return {
        "domain": domain.name,
        "version": domain.version,
        "data": domain.data_version,
        "split": split,
        "shard": f"{shard[0]}/{shard[1]}",
        "tasks": len(tasks),
        "trials": total,
        "agreed": agreed,
        "castbench_passed": passed,
        "disagreements": disagreements,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="small")
    parser.add_argument("--seeds", type=int, default=10, help="noisy trials per task")
    parser.add_argument("--noise", type=float, default=0.3, help="the noisy policy's p")
    parser.add_argument("--shard", default="0/1", help="I/N: every N-th task from the I-th")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    index, count = (int(part) for part in args.shard.split("/"))
    figures = run(args.split, args.seeds, args.noise, (index, count))
    for label in ("gold", "noisy"):
        trials, agreed = figures["trials"][label], figures["agreed"][label]  # type: ignore[index]
        passed = figures["castbench_passed"][label]  # type: ignore[index]
        where = f"{args.split} {args.shard}"
        print(f"{figures['domain']} {where} {label}: {agreed}/{trials} agree with τ² ({passed} passed)")
    for row in figures["disagreements"]:  # type: ignore[attr-defined]
        print("DISAGREE", row)
    print(f"{figures['seconds']} s")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=1)
    return 1 if figures["disagreements"] else 0


if __name__ == "__main__":
    sys.exit(main())
