"""Parity of the τ packs with τ's own code: gold replays and perturbed trajectories, graded by both.

    pip install -e '.[tau]'
    python bench/tau_parity.py                          # every pack, 1,000 perturbations each
    python bench/tau_parity.py --domains tau-telecom --count 200 --json out.json
    python bench/tau_parity.py --domains tau-airline --shard 0/2 & \
        python bench/tau_parity.py --domains tau-airline --shard 1/2   # one core each
    python bench/tau_parity.py --domains tau-retail --only perturbed   # gold checked before

For every task of every split (broken ones included), the gold trajectory (gold calls, then a
message that says the required outputs) is graded by τ's env (`step`, `calculate_reward`, stub
user, no model) and by castbench's harness (`run_trial`, `tau` grading); then `--count` distinct
perturbed trajectories per pack (see `castbench_tau.parity`). It prints the agreement per pack
as it goes, every disagreement (of rewards, or of any tool output), and exits 1 on any. τ's side
is slow (it hashes the whole database twice per trajectory): about 0.3 s per retail and 1 s per
airline trajectory on an idle core, several times that on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench.domain import load_domain  # noqa: E402
from castbench_authoring.parity import (  # noqa: E402
    castbench_trial,
    gold_trajectory,
    perturbed,
    tau_reward,
    tool_outputs,
)
from castbench_tau.domain import BROKEN_SUFFIX, TauDomain  # noqa: E402
from castbench_tau.parity import TauReference  # noqa: E402

PACKS = ["tau-telecom", "tau-telehealth", "tau-retail", "tau-airline"]


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
    assert isinstance(domain, TauDomain)
    reference = TauReference(domain)
    every = [
        task for split in domain.splits for task in domain.tasks(split) + domain.tasks(split + BROKEN_SUFFIX)
    ]
    expected = {task.id: domain.replay(task) for task in every}
    figures: dict[str, object] = {"domain": name, "version": domain.version}
    for label, cases in (
        ("gold", ((task, gold_trajectory(task)) for task in every)),
        ("perturbed", perturbed(domain, every, count, seed)),
    ):
        if label not in kinds:
            continue
        agree = total = passed = same_outputs = 0
        spent = {"tau": 0.0, "castbench": 0.0}
        for position, (task, trajectory) in enumerate(cases):
            if position % shard[1] != shard[0]:
                continue
            start = time.perf_counter()
            theirs, their_outputs = reference.run(*domain.locate(task.id), trajectory)
            spent["tau"] += time.perf_counter() - start
            start = time.perf_counter()
            record = castbench_trial(domain, task, trajectory, expected[task.id])
            ours = tau_reward(domain, task, record)
            spent["castbench"] += time.perf_counter() - start
            total += 1
            if tool_outputs(record) == their_outputs:
                same_outputs += 1
            else:
                print(f"  OUTPUTS DIFFER {name} {task.id}: {trajectory}", flush=True)
            passed += theirs == 1.0
            if theirs == ours:
                agree += 1
            else:
                print(f"  DISAGREE {name} {task.id}: τ {theirs} castbench {ours}: {trajectory}", flush=True)
            if total % 100 == 0:
                print(f"  {name} {label}: {agree}/{total} agree so far", flush=True)
        share = 100.0 * agree / total if total else 100.0
        print(
            f"{name} {label}: {agree}/{total} rewards agree ({share:.2f}%), tool outputs identical on "
            f"{same_outputs}/{total}, τ reward 1 on {passed}; "
            f"τ {spent['tau']:.1f} s, castbench {spent['castbench']:.1f} s",
            flush=True,
        )
        figures[label] = {
            "agree": agree,
            "total": total,
            "same_outputs": same_outputs,
            "tau_passed": passed,
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
    bad = sum(
        2 * r[k]["total"] - r[k]["agree"] - r[k]["same_outputs"]  # type: ignore[index]
        for r in results
        for k in kinds
    )
    print(f"disagreements: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
