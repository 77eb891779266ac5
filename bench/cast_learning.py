"""Does CAST critic training work on a CPU? `python bench/cast_learning.py [--out DIR]`.

Trains the tiny stand-in critic (a Qwen3-architecture model built from a config, no download)
through the CAST plugin's stages on the labeler's annotations of retail train tasks, then serves
it and its untrained base as the critic in `castbench eval` on held-out retail test tasks and
reports castbench's own critic figures for both (`castbench_cast.learning`). The last line is
JSON: `base` and `trained`, each with `mcc`, `mcc_ci`, `false_flag_rate` (and its interval,
detection rate, unreadable verdicts, the confusion counts); `train` and `data` say what was
trained on. Needs the `train` extra. The defaults took 13 minutes on 2 cores shared with other
work (9 minutes of CPU), most of it the 400 training steps.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from castbench_cast.learning import critic_learning
    from castbench_cast.recipe import TinyModel, TrainStage

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="stage folders (default: a temporary one)")
    parser.add_argument("--train-tasks", type=int, default=20)
    parser.add_argument("--test-tasks", type=int, default=10)
    parser.add_argument("--samples", type=int, default=2, help="teacher trajectories per train task")
    parser.add_argument("--steps", type=int, default=400, help="optimizer steps")
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=256, help="prompt and target, tokens")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    train = TrainStage(
        model="tiny",
        tiny=TinyModel(hidden=args.hidden, layers=args.layers, heads=4, vocab=1000, context=512),
        lr=args.lr,
        max_steps=args.steps,
        batch=8,
        max_length=args.max_length,
        max_completion=96,
        keep="conversation",  # a tiny model cannot read a policy: the recent conversation is kept
        save_steps=100_000,
        seed=args.seed,
        device="cpu",
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
            seed=args.seed,
            log=lambda line: print(line, file=sys.stderr),
        )
    for name in ("base", "trained"):
        figures = getattr(result, name)
        print(
            f"{name:8} verdicts {figures.verdicts:4} unreadable {figures.parse_errors:4} "
            f"MCC {figures.mcc} CI {figures.mcc_ci} false-flag {figures.false_flag_rate} "
            f"detection {figures.detection_rate}"
        )
    payload = result.model_dump(mode="json") | {"wall_s": round(time.perf_counter() - started, 1)}
    print(json.dumps(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
