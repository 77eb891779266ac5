"""How often the CI recipe of docs/ci.md is green on an unchanged agent and red on a regression:
`python bench/gate_rates.py [--pairs 20] [--jobs 2]`.

For each seed pair i it runs the recipe exactly as the doc writes it (trial counts, top-ups and
cap are read from the doc's commands, the checks from its gate.toml block):

- a baseline of `scripted:noisy?p=0.15` with the doc's baseline trials and seed 1000+i//4 (a
  baseline costs as much as several candidates, so four consecutive pairs share one);
- the same agent as candidate with seed 2000+i: fresh samples of an unchanged agent;
- `scripted:noisy?p=0.30` as candidate with seed 2000+i: the noisy-policy regression;

each candidate starting at the doc's trials, gated, and topped up with `--add-trials` while the
gate says UNDECIDED, up to the cap. It prints every pair and then the rates: green (exit 0) on the
unchanged agent, caught (FAIL, exit 1) on the regression, and credible false alarms (FAIL on the
unchanged agent), which must stay 0. Runs go to temporary databases. No asserts: it reports.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import tomllib
from collections import Counter
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from castbench._results.compare.comparability import comparability_problems, incomplete_runs  # noqa: E402
from castbench._results.compare.gate import GateConfig, Verdict, run_gate  # noqa: E402
from castbench._results.report.summary import RunSummary
from castbench._run.api import evaluate  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "ci.md"
UNCHANGED = "scripted:noisy?p=0.15"
REGRESSED = "scripted:noisy?p=0.30"


@dataclass(frozen=True)
class Recipe:
    domain: str
    baseline_trials: int
    candidate_trials: int
    top_ups: tuple[int, ...]
    cap: int
    gate: GateConfig


def _find(pattern: str, text: str, what: str) -> re.Match[str]:
    match = re.search(pattern, text, flags=re.DOTALL)
    if match is None:
        sys.exit(f"docs/ci.md: cannot find {what} (pattern {pattern!r})")
    return match


def read_recipe(doc: Path = DOC) -> Recipe:
    """The recipe's numbers and checks, taken from the doc's own commands."""
    text = doc.read_text()
    baseline = _find(
        r"castbench eval --domain (\w+) --policy \"\$POLICY\" --trials (\d+) --seed 0", text, "baseline"
    )
    candidate = _find(
        r"castbench eval --domain \w+ --policy \"\$POLICY\" --trials (\d+) --seed \"\$SEED\"",
        text,
        "candidate",
    )
    top_ups = _find(r"for extra in ([\d ]+); do", text, "the top-up loop")
    cap = _find(r"--max-trials (\d+)", text, "the cap")
    toml = _find(r"```toml\n(.*?)```", text, "gate.toml")
    return Recipe(
        domain=baseline[1],
        baseline_trials=int(baseline[2]),
        candidate_trials=int(candidate[1]),
        top_ups=tuple(int(n) for n in top_ups[1].split() if int(n) > 0),
        cap=int(cap[1]),
        gate=GateConfig.model_validate(tomllib.loads(toml[1])),
    )


def _gate(recipe: Recipe, baseline: RunSummary, candidate: RunSummary) -> Verdict | str:
    problems = incomplete_runs(baseline, candidate) + comparability_problems(baseline, candidate)
    if problems:
        return "error: " + "; ".join(problems)
    return run_gate(baseline, candidate, recipe.gate.checks, recipe.gate.confidence or 0.95).verdict


def _candidate(recipe: Recipe, db: str, policy: str, seed: int, baseline: RunSummary) -> tuple[str, int]:
    """The recipe's final verdict on one candidate, and the trials per task it took."""
    options = {"db": db, "domains": recipe.domain, "policy": policy, "seed": seed}
    summary = evaluate(trials=recipe.candidate_trials, **options).summary
    for extra in (*recipe.top_ups, 0):
        verdict = _gate(recipe, baseline, summary)
        if verdict is not Verdict.UNDECIDED or extra == 0:
            return str(verdict), int(summary.config["trials"])
        summary = evaluate(
            trials=recipe.candidate_trials, add_trials=extra, max_trials=recipe.cap, **options
        ).summary
    raise AssertionError("unreachable")


PAIRS_PER_BASELINE = 4


def _baseline(recipe: Recipe, group: int, folder: str) -> RunSummary:
    db = f"sqlite:///{Path(folder) / f'baseline-{group}.db'}"
    return evaluate(
        db=db, domains=recipe.domain, policy=UNCHANGED, trials=recipe.baseline_trials, seed=1000 + group
    ).summary


def _judged(recipe: Recipe, policy: str, index: int, baseline: RunSummary, folder: str) -> tuple[str, int]:
    label = "unchanged" if policy == UNCHANGED else "regressed"
    db = f"sqlite:///{Path(folder) / f'candidate-{index}-{label}.db'}"
    return _candidate(recipe, db, policy, 2000 + index, baseline)


def _outcome(job: Future[tuple[str, int]]) -> tuple[str, int]:
    """A candidate's verdict, or the error that stopped it (reported, not fatal to the bench)."""
    try:
        return job.result()
    except Exception as exc:  # noqa: BLE001 - any failure is a result of this bench
        return f"error: {type(exc).__name__}: {exc}", 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2, help="pairs run at once (processes)")
    args = parser.parse_args()
    recipe = read_recipe()
    checks = ", ".join(f"{c.metric} max_drop {c.max_drop}" for c in recipe.gate.checks)
    print(
        f"recipe (docs/ci.md): {recipe.domain}, baseline {recipe.baseline_trials} trials, candidate "
        f"{recipe.candidate_trials} topped up by {list(recipe.top_ups)} to at most {recipe.cap}; {checks}"
    )
    print(f"{args.pairs} seed pairs: unchanged {UNCHANGED}, regression {REGRESSED}", flush=True)
    started = time.perf_counter()
    unchanged: Counter[str] = Counter()
    regressed: Counter[str] = Counter()
    trials: list[int] = []
    with tempfile.TemporaryDirectory() as folder, ProcessPoolExecutor(args.jobs) as pool:
        groups = range((args.pairs + PAIRS_PER_BASELINE - 1) // PAIRS_PER_BASELINE)
        baselines = list(pool.map(_baseline, [recipe] * len(groups), groups, [folder] * len(groups)))
        jobs = {
            (index, policy): pool.submit(
                _judged, recipe, policy, index, baselines[index // PAIRS_PER_BASELINE], folder
            )
            for index in range(args.pairs)
            for policy in (UNCHANGED, REGRESSED)
        }
        for index in range(args.pairs):
            same, same_trials = _outcome(jobs[index, UNCHANGED])
            worse, worse_trials = _outcome(jobs[index, REGRESSED])
            unchanged[same] += 1
            regressed[worse] += 1
            trials += [same_trials, worse_trials]
            print(
                f"pair {index:2d} (baseline seed {1000 + index // PAIRS_PER_BASELINE}, candidate seed "
                f"{2000 + index}): unchanged {same} ({same_trials} trials), "
                f"regression {worse} ({worse_trials} trials)",
                flush=True,
            )
    pairs = args.pairs
    green, caught = unchanged["PASS"], regressed["FAIL"]
    print(f"\nunchanged agent: green (PASS) {green}/{pairs} = {green / pairs:.0%}; {dict(unchanged)}")
    print(f"regression: caught (FAIL) {caught}/{pairs} = {caught / pairs:.0%}; {dict(regressed)}")
    print(f"credible false alarms (FAIL on the unchanged agent): {unchanged['FAIL']}")
    mean = sum(trials) / len(trials)
    print(f"candidate trials per task: mean {mean:.1f}; wall {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
