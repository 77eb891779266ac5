"""Reliability profiles of the scripted baselines and of an agent that retries transient tool
errors, on the same tasks and seeds: `python bench/profile_baselines.py --tasks 20 --trials 4`.

For each policy it runs the clean evaluation and one per perturbation (20% tool faults, user
perturbations, environment perturbations; the profile's defaults) in a throwaway store, and
prints the profile's headline figures: clean pass^1 and pass^k, the share of tasks whose trials
disagree, trajectory similarity, pass^1 under each perturbation over clean, violations per trial.
It also times the episode hook with perturbations off against a plain run (the cost when off).
No asserts: it reports.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from castbench._records.perturbations import ENV_KINDS, FAULT_KINDS, USER_KINDS, profile_conditions
from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench_analyses.profile_metrics import reliability_profile

POLICIES = [
    "oracle",
    "tests.profile.agents:RetryingOracle",
    "scripted:noisy?p=0.1",
    "scripted:noisy",
    "scripted:lookup-refuse",
]


def _fmt(value: float | None) -> str:
    return "   –  " if value is None else f"{value:6.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="retail")
    parser.add_argument("--tasks", type=int, default=20, help="the first N test tasks")
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    args = parser.parse_args()
    from castbench.domain import resolve_domains

    domain = resolve_domains(args.domain)[0]
    tasks = [task.id for task in domain.tasks("test")][: args.tasks]
    conditions = profile_conditions(args.fault_rate, list(FAULT_KINDS), list(USER_KINDS), list(ENV_KINDS))
    names = ", ".join(["clean", *conditions])
    print(f"{args.domain}: {len(tasks)} tasks x {args.trials} trials; conditions: {names}")
    print(f"{'policy':38} pass^1 pass^k disagr  traj   faults  user    env   viol/t")
    with tempfile.TemporaryDirectory() as scratch:
        db = f"sqlite:///{Path(scratch) / 'profile.db'}"
        store = ResultsStore(db)
        for policy in POLICIES:
            options = dict(
                db=db, domains=args.domain, policy=policy, trials=args.trials, tasks=tasks, in_process=True
            )
            clean = evaluate(**options)
            perturbed = {}
            for name, perturbations in conditions.items():
                run = evaluate(**options, perturbations=perturbations).outcome.run_id
                perturbed[name] = (perturbations.label(), store.trials(run))
            profile = reliability_profile(store.trials(clean.outcome.run_id), perturbed, policy=policy)
            c, r, s = profile.consistency, profile.robustness, profile.safety
            ratios = [cond.ratio.get(1) if cond else None for cond in (r.faults, r.user, r.env)]
            print(
                f"{policy[:38]:38} {_fmt(c.pass_hat.get(1))} {_fmt(c.pass_hat.get(args.trials))} "
                f"{_fmt(c.disagreement)} {_fmt(c.trajectory_similarity)} "
                + " ".join(_fmt(v) for v in ratios)
                + f" {_fmt(s.violations_per_trial)}"
            )
        # the hook's cost when off: the same clean run again, fresh, timed against itself
        timings = []
        for _ in range(3):
            start = time.perf_counter()
            evaluate(db=db, domains=args.domain, policy="oracle", trials=args.trials, tasks=tasks, fresh=True)
            timings.append(time.perf_counter() - start)
        print(f"clean oracle run, perturbations off: best of 3 {min(timings):.2f} s")


if __name__ == "__main__":
    main()
