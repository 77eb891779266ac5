"""The CAST pipeline at small scale, stage by stage, with the figures a GPU run is sized by:
`python bench/cast_gpu_pipeline.py --model Qwen/Qwen2.5-0.5B-Instruct --serve vllm`.

It writes a recipe into `--out` (retail train subset: `--tasks` tasks x `--samples` trajectories,
the scripted noisy teacher unless `--teacher` names a served model), runs every stage through
`castbench_cast.pipeline.Pipeline`, then evaluates the trained policy on retail test tasks alone
and with the trained critic (`--rounds`). It prints each stage's wall time and counts, training
tokens/s and loss, and peak GPU memory (torch's, for training in this process; nvidia-smi's,
sampled, for the served models). `--model tiny --serve transformers` runs the same on a CPU.
No asserts: it reports. Needs the `train` extra (and vLLM on PATH for `--serve vllm`).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _recipe(args: argparse.Namespace) -> str:
    train = f"""model = "{args.model}"
lr = {args.lr}
epochs = 1
max_steps = {args.max_steps}
batch = {args.batch}
max_length = {args.max_length}
lora = {str(args.lora).lower()}
"""
    collect = f"""domains = "retail"
limit = {args.tasks}
samples = {args.samples}
policy = "{args.teacher}"
concurrency = {args.concurrency}
"""
    return f"""name = "bench"
out = "out"
[collect]
{collect}
[train_critic]
{train}
[collect_critic]
{collect}rounds = {args.rounds}
serve = "{args.serve}"
max_tokens = {args.max_tokens}
[train_policy]
{train}
"""


class GpuMemory:
    """Peak GPU memory in use (nvidia-smi, all processes), sampled every half second."""

    def __init__(self) -> None:
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                ).stdout
                self.peak_mib = max(self.peak_mib, sum(float(v) for v in out.split()))
            except (OSError, ValueError, subprocess.SubprocessError):
                return

    def __enter__(self) -> GpuMemory:
        if shutil.which("nvidia-smi"):
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def _torch_peak_gib() -> float | None:
    import torch

    if not torch.cuda.is_available():
        return None
    peak = torch.cuda.max_memory_allocated() / 2**30
    torch.cuda.reset_peak_memory_stats()
    return peak


def _eval(recipe: Any, policy: Path, critic: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    from castbench.api import evaluate
    from castbench.domain import load_domain
    from castbench.runner.rollout import Verification
    from castbench_cast.serving import CheckpointServer

    tasks = [task.id for task in load_domain("retail").tasks("test")[: args.eval_tasks]]
    started = time.perf_counter()
    with CheckpointServer(policy, args.serve, 0) as served_policy:
        options: dict[str, Any] = {
            "db": recipe.store_url,
            "domains": "retail",
            "tasks": tasks,
            "trials": args.eval_trials,
            "concurrency": args.concurrency,
            "policy": served_policy.model_string(style="prompted", temperature=0, max_tokens=args.max_tokens),
        }
        if critic is None:
            result = evaluate(**options)
        else:
            port = served_policy.port + 1 if args.serve == "vllm" else 0
            with CheckpointServer(critic, args.serve, port) as served_critic:
                critic_spec = served_critic.model_string(temperature=0, max_tokens=args.max_tokens)
                result = evaluate(
                    **options, critic=critic_spec, verification=Verification(rounds=args.rounds)
                )
    overall = result.summary.overall
    usage = overall.usage.get("policy")
    return {
        "seconds": time.perf_counter() - started,
        "run": result.outcome.run_id,
        "pass^1": overall.pass_hat.get(1),
        "end_reasons": overall.end_reasons,
        "policy_tokens_out": usage.output_tokens if usage else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    parser.add_argument("--serve", choices=("vllm", "transformers"), default="vllm")
    parser.add_argument("--teacher", default="scripted:noisy?p=0.3")
    parser.add_argument("--tasks", type=int, default=20, help="retail train tasks")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=8192)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--lr", type=float, default=5e-6)
    parser.add_argument("--lora", action="store_true")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--eval-tasks", type=int, default=10)
    parser.add_argument("--eval-trials", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from castbench_cast.pipeline import Pipeline
    from castbench_cast.recipe import load_recipe

    out = args.out or Path(tempfile.mkdtemp(prefix="cast-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "recipe.toml").write_text(_recipe(args))
    recipe = load_recipe(out / "recipe.toml")
    pipeline = Pipeline(recipe, log=lambda line: None)
    steps = [
        ("collect", pipeline.collect),
        ("annotate", pipeline.annotate),
        ("critic-data", pipeline.critic_data),
        ("train-critic", pipeline.train_critic),
        ("collect-critic", pipeline.collect_critic),
        ("policy-data", pipeline.policy_data),
        ("train-policy", pipeline.train_policy),
    ]
    print(
        f"CAST pipeline: model {args.model}, serve {args.serve}, {args.tasks} tasks x {args.samples} samples"
    )
    print(f"{'stage':<16}{'seconds':>9}  {'GPU peak GiB':>12}  figures")
    for name, run in steps:
        started = time.perf_counter()
        with GpuMemory() as memory:
            manifest = run()
        seconds = time.perf_counter() - started
        torch_peak = _torch_peak_gib() if name.startswith("train") else None
        peak = torch_peak if torch_peak is not None else (memory.peak_mib / 1024 or None)
        figures: dict[str, Any] = dict(manifest.counts)
        info = manifest.info
        if "train_s" in info and info.get("num_tokens"):
            figures["tokens/s"] = round(info["num_tokens"] / max(info["train_s"], 1e-9))
            figures["loss"] = round(info["train_loss"], 3)
        if name == "annotate" or name == "critic-data":
            figures["balance"] = manifest.balance.get("verdict")
        peak_text = f"{peak:.1f}" if peak else "-"
        print(f"{name:<16}{seconds:>9.1f}  {peak_text:>12}  {figures}")
    policy = pipeline.folder("train-policy") / "model"
    critic = pipeline.folder("train-critic") / "model"
    for label, with_critic in (("policy alone", None), ("policy + critic", critic)):
        with GpuMemory() as memory:
            result = _eval(recipe, policy, with_critic, args)
        peak = f"{memory.peak_mib / 1024:.1f}" if memory.peak_mib else "-"
        figures = {key: result[key] for key in ("pass^1", "end_reasons", "policy_tokens_out")}
        print(f"eval {label:<16} {result['seconds']:>7.1f} s  GPU peak {peak} GiB  {figures}")
    print(f"outputs in {out}")


if __name__ == "__main__":
    main()
