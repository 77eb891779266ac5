"""Does CAST critic training work on a CPU? `python bench/cast_learning.py [--out DIR]`.

Trains the tiny stand-in critic (a Qwen3-architecture model built from a config, no download)
through the CAST plugin's stages on the labeler's annotations of retail train tasks (balanced
verdicts, the verdict first, a verdict term in the loss), then serves it and its untrained base as
the critic in `castbench eval` on held-out retail test tasks, and prints castbench's own critic
figures for both beside the baselines of `castbench_cast.baselines` on the same calls: the
majority verdict per tool and per (previous action, tool), learned from the same annotations, and
the rules critic. A table, then a JSON line: `base`, `trained` (each with `mcc`, `mcc_ci`,
`false_flag_rate` and its interval, detection rate, `unreadable` verdicts and answers read in part,
the confusion counts), `baselines` (the trained critic first, then each baseline, with the share
of all actions flagged although valid: the paper's measure), `beats_base`, `beats_baselines` (the
trained critic's MCC interval wholly above both majority baselines'), `train` and `data`. With
`--policy`, CAST and RFT policies are trained too and compared with their untrained base on
held-out tasks (key `policy`). Needs the `train` extra. The defaults (every retail train and test
task, 3 held-out trials, 800 steps) took 5.3 minutes on 2 cores at a load average of ~3; docs/training.md
has the figures.
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


def main(argv: list[str] | None = None) -> int:
    from castbench_cast.learning import critic_learning, policy_learning
    from castbench_cast.recipe import TinyModel, TrainStage

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="stage folders (default: a temporary one)")
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
    import torch

    torch.set_num_threads(args.threads)
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
    print(
        f"{'critic':40} {'calls':>5} {'unreadable':>10}  {'MCC [95% CI]':24} {'false-flag [95% CI]':24} "
        f"{'detection':>9} {'flag ∧ valid share':>18}"
    )
    base = result.base
    print(
        f"{'untrained base (served)':40} {base.verdicts:5} {base.unreadable:10}  "
        f"{_figure(base.mcc, base.mcc_ci):24} {_figure(base.false_flag_rate, base.false_flag_rate_ci):24} "
        f"{_number(base.detection_rate):>9} {'':>18}"
    )
    unreadable = {"trained critic": result.trained.unreadable}
    for row in result.baselines:
        print(
            f"{row.name:40} {row.calls:5} {unreadable.get(row.name, 0):10}  "
            f"{_figure(row.mcc, row.mcc_ci):24} "
            f"{_figure(row.false_flag_rate, row.false_flag_rate_ci):24} {_number(row.detection_rate):>9} "
            f"{_number(row.flag_share_of_actions):>18}"
        )
    print(f"trained critic's MCC interval above the base's: {result.beats_base}")
    print(f"trained critic's MCC interval above both majority baselines': {result.beats_baselines}")
    payload = result.model_dump(mode="json")
    if policy is not None:
        for name, figures in policy.policies.items():
            print(
                f"policy {name:5} pass^1 {figures.pass_1} CI {figures.pass_1_ci} steps {figures.steps} "
                f"malformed {figures.malformed_rate} valid calls {figures.valid_call_rate} {figures.labels}"
            )
        payload["policy"] = policy.model_dump(mode="json")
    payload["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
