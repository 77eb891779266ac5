"""Whether a private split measures what the public test split does:
`python bench/private_splits.py [--domains retail,airline,telecom,telehealth] [--seeds 1,2,3]`.

For each domain, three private splits (`castbench tasks generate`, one per seed, as many tasks as
the public test split) are drawn and validated; then the scripted baselines run on the public
split and on each private one: `scripted:noisy` alone and with the rules critic (4 trials per
task) and the three reference floors (deterministic: 1 trial, so pass^k = pass^1). Printed per
domain and baseline: pass^k on the public split with its 95% task-bootstrap interval, and each
private split's pass^k, marked `outside` where it leaves that interval and `OUTSIDE, differs`
where it also leaves the interval a second split's figure falls in.

The public split's interval says where *its* figure's truth lies; a private split's figure is a
second draw, of tasks and of every trial's random draws, as noisy as the first. So a private
figure that measures the same thing leaves the public interval about one time in six (the
difference of two draws has sqrt(2) times the spread of one), and more often when the public
run itself drew low or high: pass^1..4 of one run move together, so one such run puts a whole
row outside. The interval that answers "does this split measure the same thing" is the one a
second split's figure falls in 95% of the time: the public figure +- 1.96 x the standard error
of the difference (each split's standard error read off its own interval). The last lines count,
per baseline, the private figures inside each of the two intervals.

With 48 figures per baseline (4 domains x 3 seeds x pass^1..4), about 2.4 leave a 95% interval
by chance alone, so "every figure inside" is a claim about all of them at once: the verdict line
uses simultaneous intervals, Bonferroni-corrected over a baseline's figures (z = 3.28 for 48; the
correction ignores that pass^1..4 of a run move together, so it is conservative), and prints each
baseline's largest difference in standard errors. The distribution check holds when no private
figure of any baseline leaves its simultaneous interval.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from castbench import evaluate
from castbench._authoring.private import generate_private, private_problems, write_private
from castbench._domain.private import use_tasks_file
from castbench._results.report.summary import DomainReport
from castbench.domain import load_domain

BASELINES = {
    "noisy p=0.3": ("scripted:noisy", "none", 4),
    "noisy p=0.3 + rules critic": ("scripted:noisy", "rules", 4),
    "floor: refuse": ("scripted:refuse", "none", 1),
    "floor: lookup-refuse": ("scripted:lookup-refuse", "none", 1),
    "floor: lookup-spray": ("scripted:lookup-spray", "none", 1),
}


def _difference_z(public: DomainReport, private: DomainReport, k: int) -> float:
    """The two splits' pass^k difference in standard errors of a difference of two independent
    draws (each split's standard error read off its own 95% interval); 0 where neither varies."""
    errors = [(report.ci95[k][1] - report.ci95[k][0]) / 3.92 for report in (public, private)]
    spread = math.hypot(*errors)
    difference = abs(public.pass_hat[k] - private.pass_hat[k])
    if spread < 1e-12:
        return 0.0 if difference < 1e-12 else math.inf
    return difference / spread


def _simultaneous_z(figures: int, level: float = 0.95) -> float:
    """The z of a two-sided interval that holds for `figures` figures at once at `level`."""
    return statistics.NormalDist().inv_cdf(1 - (1 - level) / (2 * figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default="retail,airline,telecom,telehealth")
    parser.add_argument("--seeds", default="1,2,3")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    started = time.perf_counter()
    outside: Counter[str] = Counter()  # baseline -> private figures outside the public interval
    disagree: Counter[str] = Counter()  # ... outside the interval a second split's figure falls in
    figures_of: Counter[str] = Counter()
    scores: dict[str, list[float]] = {}  # baseline -> each private figure's difference, in SEs
    with tempfile.TemporaryDirectory(prefix="castbench-private-") as scratch:
        db = f"sqlite:///{Path(scratch) / 'runs.db'}"
        for name in args.domains.split(","):
            domain = load_domain(name)
            files = []
            for seed in seeds:
                split = generate_private(domain, seed, len(domain.tasks("test")))
                path = Path(scratch) / f"{name}-{seed}.json"
                write_private(split, path)
                problems = private_problems(domain, use_tasks_file(path))
                files.append(path)
                print(
                    f"{name} seed {seed}: {split.split}, {len(split.tasks)} tasks, problems: {len(problems)}"
                )
            for baseline, (policy, critic, trials) in BASELINES.items():
                common = dict(policy=policy, critic=critic, trials=trials, seed=0, db=db)
                public = evaluate(domains=name, **common).summary.domains[name]  # type: ignore[arg-type]
                privates = [
                    evaluate(tasks_file=str(path), **common).summary.domains[name]  # type: ignore[arg-type]
                    for path in files
                ]
                line = []
                for k in sorted(public.pass_hat):
                    low, high = public.ci95[k]
                    figures = []
                    for private in privates:
                        inside = low <= private.pass_hat[k] <= high
                        score = _difference_z(public, private, k)
                        scores.setdefault(baseline, []).append(score)
                        agrees = score <= 1.96 + 1e-9
                        outside[baseline] += not inside
                        disagree[baseline] += not agrees
                        figures_of[baseline] += 1
                        mark = "" if inside else (" outside" if agrees else " OUTSIDE, differs")
                        figures.append(f"{private.pass_hat[k]:.3f}{mark}")
                    line.append(
                        f"pass^{k} {public.pass_hat[k]:.3f} [{low:.3f}, {high:.3f}]: {', '.join(figures)}"
                    )
                print(f"  {baseline:28s} " + "; ".join(line))
    print(f"private figures per baseline ({time.perf_counter() - started:.0f} s):")
    for baseline, total in figures_of.items():
        print(
            f"  {baseline:28s} outside the public interval {outside[baseline]}/{total}; outside the "
            f"interval of a second split's figure {disagree[baseline]}/{total}"
        )
    print(
        f"  {'all':28s} outside the public interval {sum(outside.values())}/{sum(figures_of.values())}; "
        f"outside the interval of a second split's figure {sum(disagree.values())}/{sum(figures_of.values())}"
    )
    print("simultaneous intervals (Bonferroni over each baseline's figures):")
    holds = True
    for baseline, values in scores.items():
        limit = _simultaneous_z(len(values))
        beyond = sum(value > limit + 1e-9 for value in values)
        holds = holds and beyond == 0
        print(
            f"  {baseline:28s} largest difference {max(values):.2f} SE; beyond {limit:.2f} SE: "
            f"{beyond}/{len(values)}"
        )
    print(f"the distribution check {'holds' if holds else 'FAILS'}: seeds {args.seeds}")


if __name__ == "__main__":
    main()
