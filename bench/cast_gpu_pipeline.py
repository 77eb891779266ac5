"""The CAST pipeline at small scale, stage by stage, with the figures a GPU run is sized by:
`python bench/cast_gpu_pipeline.py --model Qwen/Qwen2.5-0.5B-Instruct --serve vllm`.

It writes a recipe into `--out` (retail train subset: `--tasks` tasks x `--samples` trajectories,
the scripted noisy teacher unless `--teacher` names a served model), runs every stage through
`castbench_cast.pipeline.Pipeline`, then evaluates the trained policy on retail test tasks alone
and with the trained critic (`--rounds`). It prints each stage's wall time and counts, training
tokens/s and loss, and peak GPU memory (torch's, for training in this process; nvidia-smi's,
sampled, for the served models). `--model tiny --serve transformers` runs the same on a CPU.
No asserts: it reports. Needs the `train` extra (and vLLM on PATH for `--serve vllm`).

`--dry-run --recipe plugins/castbench_cast/recipes/paper.toml` plans the paper's whole recipe on
one GPU: every phase's servers (the 32B teacher and user, the base policy, the served critic and
policy checkpoints, each at its share) with training beside them, the disk (downloads, trained
outputs), and what to download first; it exits 1 when a phase or the disk does not fit.

`--dry-run` alone (any machine, no GPU) prints the plan for one GPU of `--gpu-gib` (139 for an H200)
and checks what it can: memory per stage (training: weights, gradients, AdamW state, fp32 logits
and activations; serving: each vLLM server's `--gpu-memory` share), checkpoint disk against
`--disk-gib`, the model found locally (no hub download at run time: the run sets
HF_HUB_OFFLINE=1), the ports, and the installed packages' versions. It exits 1 when a check
fails. The estimates are arithmetic, not measurements.
"""

from __future__ import annotations

import argparse
import os
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
grad_accum = {args.grad_accum}
max_length = {args.max_length}
max_completion = {args.max_completion}
keep = "{args.keep}"
lora = {str(args.lora).lower()}
lora_r = {args.lora_r}
gradient_checkpointing = {str(args.gradient_checkpointing).lower()}
save_steps = {args.save_steps}
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
rounds = {args.rounds}
serve = "{args.serve}"
max_tokens = {args.max_tokens}
gpu_memory = {args.gpu_memory}
[policy_data]
allow_privileged_teacher = {str(_privileged(args.teacher)).lower()}  # the scripted stand-in teacher
require_critiques = false  # a small run's critic may not flag: reported, not refused
[train_policy]
{train}
"""


def _privileged(policy: str) -> bool:
    from castbench_cast.pipeline import _privileged as privileged

    return privileged(policy)


def recipe_dry_run(args: argparse.Namespace) -> int:
    """The plan of a whole recipe (`--recipe`, e.g. the paper's) on one GPU; 1 when it does not fit."""
    from castbench_cast.gpu_plan import recipe_plan
    from castbench_cast.recipe import load_recipe

    recipe = load_recipe(args.recipe)
    plan = recipe_plan(
        recipe,
        gpu_gib=args.gpu_gib,
        disk_gib=args.disk_gib,
        teacher_share=args.teacher_gpu_memory,
        base_share=args.base_gpu_memory,
    )
    print(
        f"CAST recipe plan (estimates, not measurements): {recipe.name} on one {args.gpu_gib:.0f} GiB GPU, "
        f"{args.disk_gib:.0f} GiB of disk"
    )
    for name, server in plan.servers.items():
        sequences = server.sequences(args.gpu_gib)
        shape = server.shape
        size = f"{shape.params / 1e9:.1f}B x {shape.weight_bytes:g} bytes" if shape else "shape unknown"
        print(
            f"  server {name:<24} {server.model:<28} share {server.share:.2f} "
            f"({server.share * args.gpu_gib:5.1f} GiB), "
            f"{size}, context {server.context}, ~{sequences} full-context sequences at once"
        )
    for phase in plan.phases:
        training = f" + training {phase.training.gib:.1f} GiB" if phase.training else ""
        print(
            f"  phase {phase.name:<18} {phase.gib(plan.servers, args.gpu_gib):6.1f} GiB  "
            f"(servers: {', '.join(phase.servers) or 'none'}{training})"
        )
    print(
        f"disk: about {plan.disk_gib:.1f} GiB of {args.disk_gib:.0f} ("
        + ", ".join(f"{name} {gib:.1f}" for name, gib in plan.disk.items())
        + ")"
    )
    for item in plan.to_do:
        print(f"before the run: {item}")
    for problem in plan.problems:
        print(f"problem: {problem}")
    print("plan: OK" if not plan.problems else f"plan: {len(plan.problems)} problem(s)")
    return 1 if plan.problems else 0


def dry_run(args: argparse.Namespace) -> int:
    """Print the plan (see the module's docstring); 1 when a check fails."""
    import importlib.metadata

    from castbench_cast import gpu_plan
    from castbench_cast.recipe import TrainStage

    settings = TrainStage(
        model=args.model,
        lr=args.lr,
        max_steps=args.max_steps,
        batch=args.batch,
        grad_accum=args.grad_accum,
        max_length=args.max_length,
        max_completion=args.max_completion,
        keep=args.keep,
        lora=args.lora,
        lora_r=args.lora_r,
        gradient_checkpointing=args.gradient_checkpointing,
        save_steps=args.save_steps,
        **({"tiny": {"context": max(4096, args.max_length)}} if args.model == "tiny" else {}),
    )
    shares = {"policy": args.gpu_memory, "critic": args.gpu_memory}
    ports = {"policy server": args.policy_port, "critic server": args.critic_port}
    plan = gpu_plan.plan(
        args.model,
        settings,
        steps=args.max_steps,
        gpu_gib=args.gpu_gib,
        disk_gib=args.disk_gib,
        server_shares=shares,
        ports=ports,
        serve=args.serve,
    )
    print(f"CAST GPU plan (estimates, not measurements): {args.model} on one {args.gpu_gib:.0f} GiB GPU")
    if plan.shape is not None:
        shape = plan.shape
        print(
            f"model: {shape.params / 1e9:.2f}B parameters, hidden {shape.hidden}, {shape.layers} layers, "
            f"vocabulary {shape.vocab} ({shape.source})"
        )
    print(
        f"training: {'LoRA r=' + str(args.lora_r) if args.lora else 'full fine-tuning'}, micro-batch "
        f"{args.batch} x {args.max_length} tokens, grad_accum {args.grad_accum}, gradient checkpointing "
        f"{'on' if args.gradient_checkpointing else 'off'}, keep {args.keep}"
    )
    for stage in plan.stages:
        parts = ", ".join(f"{name} {gib:.1f}" for name, gib in stage.parts.items())
        print(f"  {stage.stage:<18} {stage.gib:7.1f} GiB  ({parts})")
    if plan.disk_gib is not None:
        print(f"disk: about {plan.disk_gib:.1f} GiB of checkpoints and models (limit {args.disk_gib:.0f})")
    print(f"ports: policy {args.policy_port or 'its own'}, critic {args.critic_port or 'its own'}")
    print(
        "packages: " + ", ".join(f"{name} {version or 'absent'}" for name, version in plan.packages.items())
    )
    print(f"castbench {importlib.metadata.version('castbench')}; HF_HUB_OFFLINE=1 during the run")
    for problem in plan.problems:
        print(f"problem: {problem}")
    print("plan: OK" if not plan.problems else f"plan: {len(plan.problems)} problem(s)")
    return 1 if plan.problems else 0


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
    from castbench._run.api import evaluate
    from castbench._trial.rollout import Verification
    from castbench.domain import load_domain
    from castbench_cast.serving import CheckpointServer

    tasks = [task.id for task in load_domain("retail").tasks("test")[: args.eval_tasks]]
    started = time.perf_counter()
    with CheckpointServer(policy, args.serve, args.policy_port, args.gpu_memory) as served_policy:
        options: dict[str, Any] = {
            "db": recipe.store_url,
            "domains": "retail",
            "tasks": tasks,
            "trials": args.eval_trials,
            "concurrency": args.concurrency,
            "policy": served_policy.model_string(style="prompted", temperature=0, max_tokens=args.max_tokens),
            "models_config": served_policy.models_config("policy"),
        }
        if critic is None:
            result = evaluate(**options)
        else:
            with CheckpointServer(critic, args.serve, args.critic_port, args.gpu_memory) as served_critic:
                critic_spec = served_critic.model_string(temperature=0, max_tokens=args.max_tokens)
                options["models_config"] = {
                    **options["models_config"],
                    **served_critic.models_config("critic"),
                }
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


def main(argv: list[str] | None = None) -> int:
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
    parser.add_argument("--max-completion", type=int, default=256)
    parser.add_argument("--keep", choices=("policy", "conversation"), default="policy")
    parser.add_argument("--grad-accum", type=int, default=1)
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--lora-r", type=int, default=16)
    parser.add_argument("--save-steps", type=int, default=500)
    parser.add_argument("--gpu-memory", type=float, default=0.3, help="each vLLM server's GPU share")
    parser.add_argument("--policy-port", type=int, default=0)
    parser.add_argument("--critic-port", type=int, default=0)
    parser.add_argument("--gpu-gib", type=float, default=139.0, help="an H200 as the device reports it")
    parser.add_argument("--disk-gib", type=float, default=64.0)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and check it; run nothing")
    parser.add_argument(
        "--recipe",
        type=Path,
        default=None,
        help="with --dry-run: plan this whole recipe (the paper's: "
        "plugins/castbench_cast/recipes/paper.toml)",
    )
    parser.add_argument(
        "--teacher-gpu-memory", type=float, default=0.4, help="the teacher / user server's share"
    )
    parser.add_argument("--base-gpu-memory", type=float, default=0.15, help="the base policy server's share")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--lr", type=float, default=5e-6)
    parser.add_argument("--lora", action="store_true")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--eval-tasks", type=int, default=10)
    parser.add_argument("--eval-trials", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.dry_run:
        return recipe_dry_run(args) if args.recipe is not None else dry_run(args)
    os.environ["HF_HUB_OFFLINE"] = "1"  # the model is on this machine, or the run stops here

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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
