"""Does CAST critic training work on a CPU? `python bench/cast_learning.py [--small] [--out DIR]`.

Trains the tiny stand-in critic (a Qwen3-architecture model built from a config, no download)
through the CAST plugin's stages on the labeler's annotations of retail train tasks (balanced
verdicts, the verdict first, a verdict term in the loss), with `--holdout-families` task families
kept out of training altogether, then serves it as the critic in `castbench eval` on held-out
retail test tasks twice: tasks of the families it trained on (`in-distribution`) and tasks of the
families it never saw (`held-out families`). Beside it, on the very same calls, the baselines of
`castbench_cast.baselines`: the majority verdict per tool and per (previous action, tool), the
rules critic, and a bag-of-words logistic regression on exactly the critic's input (transcript,
proposed action and last line as separate vocabularies), all learned from the same annotations,
each with a 95% interval resampling tasks. It prints the versions it ran on, a table per split,
`beats_baselines` (the trained critic's MCC interval wholly above both majority lookups') and
`beats_bow` (wholly above the bag of words'), in words, then a JSON line.

Reproducible: every stochastic piece is seeded (`--seed`: the teacher's trajectories, the
balance, the held-out families, torch's initialisation and data order), torch runs on
`--threads` threads (1 by default) with deterministic algorithms, the tokenizer's training is
single-threaded, and the served checkpoint's port is chosen free at serve time and is not part
of any run's identity (two instances run side by side on one host). The `train` extra pins the
packages that move the numbers (torch, transformers, trl, peft, datasets, accelerate,
tokenizers). `--small` is the configuration for the reproducibility check (11 minutes on 2
cores); the defaults take tens of minutes. `--base` also serves the untrained base (it cannot
answer: every verdict unreadable). With `--policy`, CAST and RFT policies are trained too and
compared with their untrained base on held-out tasks (key `policy`). Needs the `train` extra.
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


SMALL = {
    "train_tasks": 100,
    "test_tasks": 30,
    "samples": 1,
    "test_trials": 1,
    "steps": 100,
    "verdict_weight": 0.0,
    "no_balance": True,
}
"""`--small`: the reproducibility check's size (11 minutes on 2 cores at a load average of ~8)."""

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


def print_split(split: object) -> None:
    from castbench_cast.learning import SplitFigures

    assert isinstance(split, SplitFigures)
    families = ", ".join(split.families)
    print(f"\n{split.name}: {len(split.tasks)} test tasks of {len(split.families)} families ({families})")
    print(
        f"{'critic':40} {'calls':>5} {'unreadable':>10}  {'MCC [95% CI]':24} {'false-flag [95% CI]':24} "
        f"{'detection':>9} {'flag ∧ valid share':>18}"
    )
    unreadable = {"trained critic": split.trained.unreadable}
    for row in split.baselines:
        print(
            f"{row.name:40} {row.calls:5} {unreadable.get(row.name, 0):10}  "
            f"{_figure(row.mcc, row.mcc_ci):24} "
            f"{_figure(row.false_flag_rate, row.false_flag_rate_ci):24} {_number(row.detection_rate):>9} "
            f"{_number(row.flag_share_of_actions):>18}"
        )
    print(f"beats_baselines (MCC interval wholly above both majority lookups'): {split.beats_baselines}")
    print(f"beats_bow (MCC interval wholly above the bag of words'): {split.beats_bow}")
    if not split.beats_bow:
        print(
            "  -> the trained critic has not been shown to learn more than a bag of words of its own "
            "input on these calls: no learning claim beyond lexical lookup"
        )


def main(argv: list[str] | None = None) -> int:
    from castbench_cast.learning import critic_learning, policy_learning
    from castbench_cast.recipe import TinyModel, TrainStage

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="stage folders (default: a temporary one)")
    parser.add_argument("--small", action="store_true", help=f"the reproducibility check's size: {SMALL}")
    parser.add_argument(
        "--holdout-families", type=int, default=3, help="retail task families never trained on (0: none)"
    )
    parser.add_argument("--base", action="store_true", help="also serve and judge the untrained base")
    parser.add_argument("--train-tasks", type=int, default=520, help="retail train tasks (all 520)")
    parser.add_argument("--test-tasks", type=int, default=120, help="held-out retail test tasks (all 120)")
    parser.add_argument("--samples", type=int, default=2, help="teacher trajectories per train task")
    parser.add_argument("--test-trials", type=int, default=3)
    parser.add_argument("--steps", type=int, default=800, help="optimizer steps")
    parser.add_argument(
        "--verdict-weight",
        type=float,
        default=5.0,
        help="the verdict term of the loss (0: the target's tokens alone)",
    )
    parser.add_argument(
        "--no-balance",
        action="store_true",
        help="train on the verdicts as collected (not repeated to equal counts)",
    )
    parser.add_argument("--lr", type=float, default=6e-3)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=384, help="prompt and target, tokens")
    parser.add_argument("--max-completion", type=int, default=48, help="target (and served answer), tokens")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument(
        "--target",
        choices=("verdict", "annotation"),
        default="verdict",
        help="the critic's answer: failure type and verdict, or the whole annotation (rationale first)",
    )
    parser.add_argument("--vocab", type=int, default=2000, help="the tiny model's tokenizer")
    parser.add_argument(
        "--policy",
        action="store_true",
        help="also train CAST and RFT policies (the critic in the teacher's loop) and compare them "
        "with their untrained base on the held-out tasks (key `policy`)",
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
    if args.small:
        for name, value in SMALL.items():
            setattr(args, name, value)
    deterministic(args.threads)
    ran_on = versions()
    print("versions: " + " ".join(f"{name}={value}" for name, value in ran_on.items()), flush=True)
    train = TrainStage(
        model="tiny",
        tiny=TinyModel(hidden=args.hidden, layers=args.layers, heads=4, vocab=args.vocab, context=512),
        lr=args.lr,
        max_steps=args.steps,
        batch=8,
        max_length=args.max_length,
        max_completion=args.max_completion,
        keep="conversation",  # a tiny model cannot read a policy: the recent conversation is kept
        save_steps=100_000,
        seed=args.seed,
        device="cpu",
        verdict_weight=args.verdict_weight,
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cast-learning-") as scratch:
        out = args.out or Path(scratch)
        result = critic_learning(
            out,
            train,
            train_tasks=args.train_tasks,
            test_tasks=args.test_tasks,
            samples=args.samples,
            test_trials=args.test_trials,
            seed=args.seed,
            max_tokens=args.max_completion,
            target=args.target,
            balance=not args.no_balance,
            holdout_families=args.holdout_families,
            evaluate_base=args.base,
            log=lambda line: print(line, file=sys.stderr),
        )
        policy = None
        if args.policy:
            policy = policy_learning(
                out,
                train,
                train.model_copy(
                    update={"max_steps": args.policy_steps, "max_length": 384, "max_completion": 96}
                ),
                train_tasks=args.train_tasks,
                policy_tasks=args.policy_tasks,
                test_tasks=args.policy_test_tasks,
                samples=args.samples,
                seed=args.seed,
                target=args.target,
                max_steps=args.max_steps,
                log=lambda line: print(line, file=sys.stderr),
            )
    base = result.base
    if base is not None:
        print(
            f"untrained base (served, in-distribution): {base.verdicts} verdicts, "
            f"{base.unreadable} unreadable, MCC {_figure(base.mcc, base.mcc_ci)}; "
            f"trained critic's MCC interval above it: {result.beats_base}"
        )
    print(f"bag of words: {result.bow}; held-out families: {', '.join(result.held_out_families) or 'none'}")
    for split in result.splits:
        print_split(split)
    payload = result.model_dump(mode="json")
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
