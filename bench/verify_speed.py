"""What `castbench verify` pays per trial: committed runs re-executed, re-graded and re-labelled
as `verify` and `leaderboard build` do (`castbench._results.publish.verify.verify_run`).

    python bench/verify_speed.py                      # 200 trials of each run below
    python bench/verify_speed.py --trials 50 --runs scripted-baselines/oracle

A run's trials are taken evenly over the export (every domain of it), and verified `--passes`
times: the fastest pass is printed, in CPU ms per trial (the process's CPU time: what a shared
machine's other load moves least), with the verdict (a figure of a run that does not verify is no
figure). Export reading is outside the timing. Figures of one invocation compare; to compare two
trees, run each in turn in one session.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench._records.store.export import read_export  # noqa: E402
from castbench._results.publish.verify import verify_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RUNS = (
    "scripted-baselines/oracle",
    "scripted-baselines/noisy-p-0-3-rules-critic",
    "scripted-baselines/noisy-p-0-3-noisy-critic",
    "scripted-baselines/floor-lookup-spray",
    "tau2/noisy-p-0-3",
)
"""The kinds of run a board holds: the oracle, a critic that re-decides (rules, seeded noisy), an
unlabelled floor, a τ² pack (its limits, its user's device steps)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="*", default=list(RUNS), help="results/<name> without the suffix")
    parser.add_argument("--trials", type=int, default=200, help="trials per run")
    parser.add_argument("--passes", type=int, default=3, help="verifications per run (the fastest counts)")
    args = parser.parse_args()
    total_s = total_n = 0.0
    print(f"{'run':46} {'trials':>6} {'CPU ms/trial':>12}  verdict")
    for name in args.runs:
        exported = read_export(REPO / "results" / f"{name}.castbench.json.gz")
        every = max(1, len(exported.trials) // args.trials)
        trials = exported.trials[::every][: args.trials]
        best = float("inf")
        for _ in range(args.passes):
            started = time.process_time()
            report = verify_run(exported.run_id, exported.config, trials, exported.config_hash)
            best = min(best, time.process_time() - started)
        verdict = "ok" if report.ok else f"NOT OK ({len(report.mismatches)} trials)"
        print(f"{name:46} {len(trials):>6} {1000 * best / len(trials):>12.2f}  {verdict}")
        total_s, total_n = total_s + best, total_n + len(trials)
    print(f"{'all':46} {int(total_n):>6} {1000 * total_s / total_n:>12.2f}")


if __name__ == "__main__":
    main()
