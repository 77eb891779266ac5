"""Does CAST critic training work on a CPU? `python bench/cast_learning.py [--full] [--out DIR]`.

Trains the tiny stand-in critic (a Qwen3-architecture model built from a config, no download)
twice through the CAST plugin's stages on the labeler's annotations of retail train tasks, with
`--holdout-families` task families kept out of training altogether: `verdict only` (it answers
the verdict and failure type) and `rationale + verdict` (the paper's order: the check that
decided and its particulars, then the verdict and failure type), the same data, steps, seed and
prompt window; the loss is the target's tokens plus `--verdict-weight` x the verdict word's.
Each is served as the critic in `castbench eval` on held-out retail test tasks twice: tasks of
the families it trained on (`in-distribution`) and tasks of the families it never saw
(`held-out families`), the very same calls for both critics (checked by a digest of the judged
calls). Beside them, on those calls, the baselines of `castbench_cast.baselines`: the majority
verdict per tool and per (previous action, tool), the rules critic, and a bag-of-words logistic
regression on exactly the critic's input (transcript, proposed action and last line as separate
vocabularies), all learned from the same annotations, each with a 95% interval resampling
tasks. It prints the versions it ran on, what the rationales trained on are (how many different
ones per verdict, how many hold a verdict word), a table per split, per critic
`beats_baselines` (its MCC interval wholly above both majority lookups') and `beats_bow`
(wholly above the bag of words'), `what the rationale adds`, in words, then a JSON line.

Reproducible: every stochastic piece is seeded (`--seed`: the teacher's trajectories, the
balance, the held-out families, torch's initialisation and data order), torch runs on
`--threads` threads (1 by default) with deterministic algorithms, the tokenizer's training is
single-threaded, and the served checkpoint's port is chosen free at serve time and is not part
of any run's identity (two instances run side by side on one host). The `train` extra pins the
packages that move the numbers (torch, transformers, trl, peft, datasets, accelerate,
tokenizers). The default size finishes in about 10 minutes on 2 shared cores (docs/training.md
has the measured walls of two instances side by side); `--full` is the earlier, larger size
(tens of minutes per critic). `--base` also serves the untrained base (it cannot answer: every
verdict unreadable). With `--policy`, CAST and RFT policies are trained too (the first critic in
the teacher's loop) and compared with their untrained base on held-out tasks (key `policy`).
Needs the `train` extra.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _figure(value: float | None, interval: tuple[float, float] | None) -> str:
    where = "" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]"
    return _number(value) + where


DEFAULT = {
    "train_tasks": 100,
    "test_tasks": 30,
    "samples": 1,
    "test_trials": 1,
    "steps": 100,
    "verdict_weight": 0.0,
    "no_balance": True,
}
"""The default size: both critics (verdict only, rationale first) trained and judged on both
splits in about 10 minutes on 2 shared cores (docs/training.md has the measured walls)."""

FULL = {
    "train_tasks": 520,
    "test_tasks": 120,
    "samples": 2,
    "test_trials": 3,
    "steps": 800,
    "verdict_weight": 5.0,
    "no_balance": False,
}
"""`--full`: the earlier defaults (the whole retail train split x 2, 800 steps, balanced, a
verdict term of 5, all 120 test tasks x 3): tens of minutes per critic on 2 cores."""

CRITICS = {"verdict": "verdict only", "rationale-first": "rationale + verdict"}
"""The critics the bench trains (`--critics`), by their target (`CriticDataStage.target`), and
their rows' names: the same data, steps and prompt window, the answer differs."""

_VERSIONED = (
    "torch",
    "transformers",
    "tokenizers",
    "trl",
    "peft",
    "datasets",
    "accelerate",
    "numpy",
    "scikit-learn",
)


def versions() -> dict[str, str | None]:
    """Python's and the installed versions of the packages that move the numbers."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def deterministic(threads: int) -> None:
    """Fixed torch threads, deterministic algorithms, one tokenizer thread."""
    import os

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


def _row(name: str, row: object, unreadable: object) -> str:
    from castbench_cast.baselines import BaselineFigures

    assert isinstance(row, BaselineFigures)
    return (
        f"{name:40} {row.calls:5} {unreadable:>10}  {_figure(row.mcc, row.mcc_ci):24} "
        f"{_figure(row.false_flag_rate, row.false_flag_rate_ci):24} {_number(row.detection_rate):>9} "
        f"{_number(row.flag_share_of_actions):>18}"
    )


def print_split(splits: dict[str, object]) -> dict[str, object]:
    """One split's table: each trained critic (by its target), then the baselines once (the
    critics were judged on the same calls: checked by their calls' digest). Returns the split's
    verdicts in words (`beats_*`, `rationale_adds`, `same_calls`)."""
    from castbench_cast.learning import SplitFigures, beats

    figures = {target: split for target, split in splits.items() if isinstance(split, SplitFigures)}
    first = next(iter(figures.values()))
    families = ", ".join(first.families)
    print(f"\n{first.name}: {len(first.tasks)} test tasks of {len(first.families)} families ({families})")
    print(
        f"{'critic':40} {'calls':>5} {'unreadable':>10}  {'MCC [95% CI]':24} {'false-flag [95% CI]':24} "
        f"{'detection':>9} {'flag ∧ valid share':>18}"
    )
    for target, split in figures.items():
        print(_row(f"trained critic: {CRITICS[target]}", split.baselines[0], split.trained.unreadable))
    for row in first.baselines[1:]:
        print(_row(row.name, row, "–"))
    same = len({split.calls_digest for split in figures.values()}) == 1
    words: dict[str, object] = {"split": first.name, "same_calls": same}
    if len(figures) > 1:
        print(f"same calls for every critic (digest of the judged calls): {same}")
    for target, split in figures.items():
        name = CRITICS[target]
        print(f"{name}: beats_baselines (MCC interval above both majority lookups'): {split.beats_baselines}")
        print(f"{name}: beats_bow (MCC interval wholly above the bag of words'): {split.beats_bow}")
        words[target] = {"beats_baselines": split.beats_baselines, "beats_bow": split.beats_bow}
    if "verdict" in figures and "rationale-first" in figures:
        rationale, verdict = figures["rationale-first"].baselines[0], figures["verdict"].baselines[0]
        above, below = beats(rationale, [verdict]), beats(verdict, [rationale])
        adds = "more" if above else "less" if below else "nothing shown (the intervals overlap)"
        print(f"what the rationale adds (MCC interval wholly above / below the verdict-only one's): {adds}")
        words["rationale_adds"] = adds
    if not any(split.beats_bow for split in figures.values()):
        print(
            "  -> no trained critic has been shown to learn more than a bag of words of its own "
            "input on these calls: no learning claim beyond lexical lookup"
        )
    return words


def rationale_figures(out: Path) -> dict[str, object]:
    """Is the trained rationale more than a template carrying the label? Over the rationale
    critic's training targets: how many different rationales each verdict has, how many
    rationales hold a verdict word, and which checks decide."""
    import re
    from collections import Counter

    rows = (out / "critic-data" / "train.jsonl").read_text().splitlines()
    answers = [json.loads(json.loads(line)["messages"][-1]["content"]) for line in rows]
    distinct: dict[str, set[str]] = {}
    for answer in answers:
        distinct.setdefault(answer["verdict"], set()).add(f"{answer.get('check')}: {answer['explanation']}")
    word = re.compile(r"\b(in)?valid\b", re.IGNORECASE)
    return {
        "targets": len(answers),
        "distinct_rationales": {verdict: len(found) for verdict, found in sorted(distinct.items())},
        "holding_a_verdict_word": sum(bool(word.search(a["explanation"])) for a in answers),
        "checks": dict(sorted(Counter(str(a.get("check")) for a in answers).items())),
    }


def main(argv: list[str] | None = None) -> int:
    from castbench_cast.learning import critic_learning, policy_learning
    from castbench_cast.recipe import TinyModel, TrainStage

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="stage folders (default: a temporary one)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help=f"the earlier, larger size: {FULL}")
    size.add_argument("--small", action="store_true", help="the default size (kept for older commands)")
    parser.add_argument(
        "--critics",
        default="verdict,rationale-first",
        help="the critics to train, by target: verdict (verdict and failure type), rationale-first "
        "(the paper's order: check and particulars, then verdict and failure type), annotation "
        "(verdict first, then the rationale)",
    )
    parser.add_argument(
        "--holdout-families", type=int, default=3, help="retail task families never trained on (0: none)"
    )
    parser.add_argument("--base", action="store_true", help="also serve and judge the untrained base")
    parser.add_argument("--train-tasks", type=int, default=DEFAULT["train_tasks"], help="retail train tasks")
    parser.add_argument("--test-tasks", type=int, default=DEFAULT["test_tasks"], help="test tasks per split")
    parser.add_argument(
        "--samples", type=int, default=DEFAULT["samples"], help="teacher trajectories per train task"
    )
    parser.add_argument("--test-trials", type=int, default=DEFAULT["test_trials"])
    parser.add_argument("--steps", type=int, default=DEFAULT["steps"], help="optimizer steps")
    parser.add_argument(
        "--verdict-weight",
        type=float,
        default=DEFAULT["verdict_weight"],
        help="the verdict term of the loss (0: the target's tokens alone)",
    )
    balance = parser.add_mutually_exclusive_group()
    balance.add_argument(
        "--no-balance",
        action="store_true",
        default=DEFAULT["no_balance"],
        help="train on the verdicts as collected (the default)",
    )
    balance.add_argument(
        "--balance",
        dest="no_balance",
        action="store_false",
        help="repeat the rarer verdict's examples to equal counts (--full)",
    )
    parser.add_argument("--lr", type=float, default=6e-3)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument(
        "--max-length", type=int, default=384, help="the verdict-only critic's prompt and target, tokens"
    )
    parser.add_argument(
        "--max-completion", type=int, default=48, help="the verdict-only critic's target (and answer), tokens"
    )
    parser.add_argument(
        "--rationale-tokens",
        type=int,
        default=64,
        help="added to both lengths for a critic that writes a rationale: the same prompt window",
    )
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=2000, help="the tiny model's tokenizer")
    parser.add_argument(
        "--policy",
        action="store_true",
        help="also train CAST and RFT policies (the first critic in the teacher's loop) and compare "
        "them with their untrained base on the held-out tasks (key `policy`)",
    )
    parser.add_argument("--policy-steps", type=int, default=100)
    parser.add_argument("--policy-tasks", type=int, default=20, help="train tasks collected with the critic")
    parser.add_argument("--policy-test-tasks", type=int, default=8)
    parser.add_argument("--max-steps", type=int, default=5, help="agent actions per held-out policy trial")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (on a busy machine 2 threads spin: 20x slower per step than 1)",
    )
    args = parser.parse_args(argv)
    if args.full:
        for name, value in FULL.items():
            setattr(args, name, value)
    targets = [target.strip() for target in args.critics.split(",") if target.strip()]
    unknown = [target for target in targets if target not in (*CRITICS, "annotation")]
    if not targets or unknown:
        print(f"error: --critics {args.critics!r}: verdict, rationale-first or annotation", file=sys.stderr)
        return 2
    CRITICS.setdefault("annotation", "verdict + rationale")
    deterministic(args.threads)
    ran_on = versions()
    print("versions: " + " ".join(f"{name}={value}" for name, value in ran_on.items()), flush=True)

    def stage(target: str) -> TrainStage:
        extra = 0 if target == "verdict" else args.rationale_tokens
        return TrainStage(
            model="tiny",
            tiny=TinyModel(hidden=args.hidden, layers=args.layers, heads=4, vocab=args.vocab, context=512),
            lr=args.lr,
            max_steps=args.steps,
            batch=8,
            max_length=args.max_length + extra,
            max_completion=args.max_completion + extra,
            keep="conversation",  # a tiny model cannot read a policy: the recent conversation is kept
            save_steps=100_000,
            seed=args.seed,
            device="cpu",
            verdict_weight=args.verdict_weight,
        )

    started = time.perf_counter()
    results = {}
    rationales = None
    with tempfile.TemporaryDirectory(prefix="cast-learning-") as scratch:
        out = args.out or Path(scratch)
        for target in targets:
            train = stage(target)
            results[target] = critic_learning(
                out / target,
                train,
                train_tasks=args.train_tasks,
                test_tasks=args.test_tasks,
                samples=args.samples,
                test_trials=args.test_trials,
                seed=args.seed,
                max_tokens=train.max_completion,
                target=target,
                balance=not args.no_balance,
                holdout_families=args.holdout_families,
                evaluate_base=args.base and target == targets[0],
                log=lambda line: print(line, file=sys.stderr),
            )
            if target != "verdict" and rationales is None:
                rationales = rationale_figures(out / target)
        policy = None
        if args.policy:
            first = stage(targets[0])
            policy = policy_learning(
                out / targets[0],
                first,
                first.model_copy(
                    update={"max_steps": args.policy_steps, "max_length": 384, "max_completion": 96}
                ),
                train_tasks=args.train_tasks,
                policy_tasks=args.policy_tasks,
                test_tasks=args.policy_test_tasks,
                samples=args.samples,
                seed=args.seed,
                target=targets[0],
                max_steps=args.max_steps,
                log=lambda line: print(line, file=sys.stderr),
            )
    lead = results[targets[0]]
    base = lead.base
    if base is not None:
        print(
            f"untrained base (served, in-distribution): {base.verdicts} verdicts, "
            f"{base.unreadable} unreadable, MCC {_figure(base.mcc, base.mcc_ci)}; "
            f"{CRITICS[targets[0]]} critic's MCC interval above it: {lead.beats_base}"
        )
    print(f"bag of words: {lead.bow}; held-out families: {', '.join(lead.held_out_families) or 'none'}")
    for target, result in results.items():
        print(f"{CRITICS[target]} critic: trained {result.train}; data {result.data}")
    if rationales is not None:
        print(f"rationales trained on: {rationales}")
    verdicts = [
        print_split({target: result.splits[index] for target, result in results.items()})
        for index in range(len(lead.splits))
    ]
    payload: dict[str, object] = {
        "critics": {target: result.model_dump(mode="json") for target, result in results.items()},
        "verdicts": verdicts,
        "rationales": rationales,
    }
    if policy is not None:
        for name, figures in policy.policies.items():
            print(
                f"policy {name:5} pass^1 {figures.pass_1} CI {figures.pass_1_ci} steps {figures.steps} "
                f"malformed {figures.malformed_rate} valid calls {figures.valid_call_rate} {figures.labels}"
            )
        payload["policy"] = policy.model_dump(mode="json")
    payload["versions"] = ran_on
    payload["settings"] = {key: value for key, value in vars(args).items() if key != "out"}
    payload["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
