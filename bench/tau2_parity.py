"""Parity of the τ² packs with τ²'s own evaluator: gold replays and perturbed trajectories, graded by both.

    pip install -e '.[tau2]'
    python bench/tau2_parity.py                          # both packs, 1,000 perturbations each
    python bench/tau2_parity.py --domains tau2-airline --count 200 --json out.json
    python bench/tau2_parity.py --domains tau2-retail --shard 0/2 & \
        python bench/tau2_parity.py --domains tau2-retail --shard 1/2   # one core each

For every task of the pack (broken ones included), the gold trajectory (gold calls, then a message
that says the required outputs) runs as a castbench trial (`tau` grading), and the trial's
messages, as a τ² `SimulationRun`, are graded by τ²'s `evaluate_simulation` (`EvaluationType.ALL`):
τ² rebuilds its environment, replays every call and raises if any tool answer differs from the
one castbench recorded, replays the gold on another environment and compares database hashes
and required outputs. Then `--count` distinct perturbed trajectories per pack (one action
dropped, an argument changed to another id of the data, a write added, two actions swapped,
outputs said or left out: `castbench_authoring.parity`). It prints the agreement per pack, every
disagreement (of rewards, or of any tool output), and exits 1 on any. τ²'s side is slow (three
environments per trajectory): about 0.7-1.2 s per trajectory on an idle core.
Only the package's own data: τ²'s evaluator reads its environment from the package.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench.domain import load_domain  # noqa: E402
from castbench_authoring.parity import castbench_trial, gold_trajectory, perturbed, tau_reward  # noqa: E402
from castbench_tau2.domain import Tau2Domain  # noqa: E402
from castbench_tau2.parity import Tau2Reference  # noqa: E402

PACKS = ["tau2-retail", "tau2-airline"]


def run_pack(
    name: str,
    count: int,
    seed: int,
    shard: tuple[int, int] = (0, 1),
    kinds: tuple[str, ...] = ("gold", "perturbed"),
) -> dict[str, object]:
    """With `shard` (I, N) only every N-th case from the I-th is run: N processes with I = 0..N-1
    together run every case once (the perturbations are drawn identically in each)."""
    domain = load_domain(name)
    assert isinstance(domain, Tau2Domain)
    reference = Tau2Reference(domain)
    every = [domain.task(f"{name}-{raw.id}") for raw in domain.source.raw_tasks]  # type: ignore[union-attr]
    expected = {task.id: domain.replay(task) for task in every}
    figures: dict[str, object] = {"domain": name, "version": domain.version, "data": domain.data_version}
    for label, cases in (
        ("gold", ((task, gold_trajectory(task)) for task in every)),
        ("perturbed", perturbed(domain, every, count, seed)),
    ):
        if label not in kinds:
            continue
        agree = total = passed = same_outputs = 0
        spent = {"tau2": 0.0, "castbench": 0.0}
        for position, (task, trajectory) in enumerate(cases):
            if position % shard[1] != shard[0]:
                continue
            start = time.perf_counter()
            record = castbench_trial(domain, task, trajectory, expected[task.id])
            ours = tau_reward(domain, task, record)
            spent["castbench"] += time.perf_counter() - start
            start = time.perf_counter()
            total += 1
            try:
                theirs: float | None = reference.reward(record)
                same_outputs += 1
            except ValueError as exc:  # τ²'s replay got another answer than castbench recorded
                theirs = None
                print(f"  OUTPUTS DIFFER {name} {task.id}: {exc}: {trajectory}", flush=True)
            spent["tau2"] += time.perf_counter() - start
            passed += theirs == 1.0
            if theirs == ours:
                agree += 1
            else:
                print(f"  DISAGREE {name} {task.id}: τ² {theirs} castbench {ours}: {trajectory}", flush=True)
            if total % 100 == 0:
                print(f"  {name} {label}: {agree}/{total} agree so far", flush=True)
        share = 100.0 * agree / total if total else 100.0
        print(
            f"{name} {label}: {agree}/{total} rewards agree ({share:.2f}%), tool outputs identical on "
            f"{same_outputs}/{total}, τ² reward 1 on {passed}; "
            f"τ² {spent['tau2']:.1f} s, castbench {spent['castbench']:.1f} s",
            flush=True,
        )
        figures[label] = {
            "agree": agree,
            "total": total,
            "same_outputs": same_outputs,
            "tau2_passed": passed,
            "seconds": spent,
        }
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--domains", default=",".join(PACKS))
    parser.add_argument("--count", type=int, default=1000, help="perturbed trajectories per pack")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--only", help="gold or perturbed: run only those cases")
    parser.add_argument("--shard", default="0/1", help="I/N: run the I-th of N equal shares of the cases")
    args = parser.parse_args()
    index, _, of = args.shard.partition("/")
    shard = (int(index), int(of))
    kinds = tuple(args.only.split(",")) if args.only else ("gold", "perturbed")
    results = [
        run_pack(name.strip(), args.count, args.seed, shard, kinds) for name in args.domains.split(",")
    ]
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)
    for figures in results:  # one line per pack, the figures README quotes
        parts = [
            f"{label} {f['agree']}/{f['total']} rewards agree, tool outputs identical on {f['same_outputs']}"
            for label in kinds
            if isinstance(f := figures.get(label), dict)
        ]
        print(f"SUMMARY {figures['domain']} ({figures['data']}, seed {args.seed}): " + "; ".join(parts))
    bad = sum(
        2 * r[k]["total"] - r[k]["agree"] - r[k]["same_outputs"]  # type: ignore[index]
        for r in results
        for k in kinds
    )
    print(f"disagreements: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
