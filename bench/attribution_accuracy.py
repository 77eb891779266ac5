"""How often rule-based failure attribution is right, where the truth is known:
`python bench/attribution_accuracy.py [--trials 4] [--seed 0] [--noisy-p 0.3]`.

1. `scripted:noisy` with the scripted user over the four castbench domains (test split): a failed
   trial agrees when the attributed step and cause are those of a mistake the policy injected
   (its log, which the attribution never reads). Done when >= 95%.
2. The oracle with each misbehaving scripted user (`scripted:leaky`, `:contradicting`,
   `:quitter`): the oracle alone passes every task, so every failure is the user's doing; it
   agrees when the attribution names the user. Done when >= 90%.

Prints the per-domain and per-user figures, the attributed causes, and the first disagreements.
No asserts: it reports (tests/attribution runs a CI-sized version with thresholds).
"""

from __future__ import annotations

import argparse
import time

from castbench._results.attribution.accuracy import Agreement, noisy_agreement, user_blame

DOMAINS = ("airline", "retail", "telecom", "telehealth")


def _print(title: str, report: dict[str, Agreement]) -> None:
    failed = sum(a.failed for a in report.values())
    agreed = sum(a.agreed for a in report.values())
    print(f"\n{title}")
    for name, item in report.items():
        causes = ", ".join(
            f"{cause} {count}" for cause, count in sorted(item.causes.items(), key=lambda c: -c[1])
        )
        print(f"  {name:24s} {item.agreed:4d}/{item.failed:<4d} = {item.share:6.1%}   causes: {causes}")
    print(f"  {'all':24s} {agreed:4d}/{failed:<4d} = {agreed / failed if failed else 1.0:6.1%}")
    for item in report.values():
        for line in item.disagreements[:5]:
            print(f"    disagrees: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4, help="trials per task for scripted:noisy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noisy-p", type=float, default=0.3, help="scripted:noisy's mistake rate")
    args = parser.parse_args()
    started = time.perf_counter()
    noisy = noisy_agreement(
        DOMAINS, trials=args.trials, seed=args.seed, policy=f"scripted:noisy?p={args.noisy_p}"
    )
    _print(
        f"scripted:noisy?p={args.noisy_p}, {args.trials} trials/task, seed {args.seed}: "
        "failed trials whose attributed step and cause are an injected mistake's",
        noisy,
    )
    users = user_blame(DOMAINS, trials=1, seed=args.seed)
    _print("oracle with a misbehaving user, 1 trial/task: failed trials attributed to the user", users)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
