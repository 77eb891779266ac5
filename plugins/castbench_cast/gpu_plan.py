"""What a CAST run will need of one GPU and its disk, estimated before it starts (no GPU needed).

The figures are arithmetic from the model's shape and the recipe's settings, not measurements:
- training, full fine-tuning: fp32 master weights, gradients and AdamW's two moments (16 bytes a
  parameter; bf16 runs as autocast, since pure-bf16 weights lose updates as small as lr 5e-6
  times a gradient); LoRA: the frozen bf16 base (2 bytes a parameter) and small adapters;
  plus the loss's fp32 logits and their gradient (micro-batch x length x vocabulary x 8 bytes)
  and activations (34 bytes per token, hidden unit and layer without gradient checkpointing,
  about 2 with it: one saved input per layer);
- serving: each vLLM server takes its `gpu_memory` share of the GPU (vLLM reserves it whole);
- disk: a full fine-tuning checkpoint holds fp32 weights and optimizer state (12 bytes a
  parameter), `save_total_limit` (2) of them, and every trained model is saved in bf16.
`bench/cast_gpu_pipeline.py --dry-run` prints it.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import socket
from pathlib import Path

from pydantic import BaseModel

from castbench_cast.recipe import TrainStage

__all__ = [
    "ModelShape",
    "Plan",
    "StageMemory",
    "checkpoint_gib",
    "model_shape",
    "packages",
    "training_memory",
]

GIB = 2**30
_PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "vllm")


class ModelShape(BaseModel):
    params: int
    hidden: int
    layers: int
    vocab: int
    source: str
    """Where the shape was read: a local folder, the hub cache, or the tiny config."""


class StageMemory(BaseModel):
    stage: str
    parts: dict[str, float]
    """GiB per part."""

    @property
    def gib(self) -> float:
        return sum(self.parts.values())


class Plan(BaseModel):
    model: str
    shape: ModelShape | None
    stages: list[StageMemory]
    disk_gib: float | None
    packages: dict[str, str | None]
    problems: list[str]


def model_shape(model: str, settings: TrainStage) -> tuple[ModelShape | None, str | None]:
    """The model's shape from its config on this machine (never downloaded); or why not."""
    if model == "tiny":
        tiny = settings.tiny
        per_layer = 4 * tiny.hidden**2 + 3 * tiny.hidden * 2 * tiny.hidden
        params = tiny.layers * per_layer + tiny.vocab * tiny.hidden
        return ModelShape(
            params=params, hidden=tiny.hidden, layers=tiny.layers, vocab=tiny.vocab, source="tiny config"
        ), None
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(model, local_files_only=True)
    except (OSError, ValueError) as exc:
        return None, (
            f"{model}: not on this machine ({type(exc).__name__}); download it before the run "
            f"(`huggingface-cli download {model}`): the run sets HF_HUB_OFFLINE=1"
        )
    with torch.device("meta"):
        meta = AutoModelForCausalLM.from_config(config)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    source = "local folder" if Path(model).exists() else "hub cache"
    return ModelShape(
        params=sum(p.numel() for p in meta.parameters()),
        hidden=int(text.hidden_size),
        layers=int(text.num_hidden_layers),
        vocab=int(text.vocab_size),
        source=source,
    ), None


def training_memory(stage: str, shape: ModelShape, settings: TrainStage) -> StageMemory:
    tokens = settings.batch * settings.max_length
    if settings.lora:
        adapters = 2 * settings.lora_r * shape.layers * 7 * shape.hidden  # q k v o gate up down
        parts = {"weights (bf16, frozen)": 2 * shape.params, "adapters + AdamW": 16 * adapters}
    else:
        parts = {
            "weights (fp32 master)": 4 * shape.params,
            "gradients (fp32)": 4 * shape.params,
            "AdamW moments (fp32)": 8 * shape.params,
        }
    parts["logits + grad (fp32)"] = 8 * tokens * shape.vocab
    per_token = 2 if settings.gradient_checkpointing else 34
    parts["activations"] = per_token * tokens * shape.hidden * shape.layers
    return StageMemory(stage=stage, parts={name: value / GIB for name, value in parts.items()})


def checkpoint_gib(shape: ModelShape, settings: TrainStage, steps: int) -> float:
    """Disk a train stage writes: intermediate checkpoints (at most 2 kept) and the bf16 model."""
    saved = min(2, steps // settings.save_steps) if steps > 0 else 2
    per_checkpoint = (
        2 * settings.lora_r * shape.layers * 7 * shape.hidden * 12 if settings.lora else 12 * shape.params
    )
    return (saved * per_checkpoint + 2 * shape.params) / GIB


def packages() -> dict[str, str | None]:
    """Installed versions (None: absent); vLLM, which lives in a venv of its own, by its command."""
    found: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    if found["vllm"] is None and shutil.which("vllm"):
        found["vllm"] = f"on PATH ({shutil.which('vllm')})"
    return found


def port_problem(port: int) -> str | None:
    if port == 0:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return f"port {port} is in use on 127.0.0.1"
    return None


def plan(
    model: str,
    settings: TrainStage,
    *,
    steps: int,
    gpu_gib: float,
    disk_gib: float,
    server_shares: dict[str, float],
    ports: dict[str, int],
    serve: str,
) -> Plan:
    """The plan of a run of `model` trained with `settings` (the critic, the policy and its RFT
    control: three trainings one after another), then served (`server_shares`: name -> share)."""
    shape, problem = model_shape(model, settings)
    problems = [problem] if problem else []
    stages: list[StageMemory] = []
    disk = None
    if shape is not None:
        for stage in ("train-critic", "train-policy", "train-policy-rft"):
            memory = training_memory(stage, shape, settings)
            stages.append(memory)
        if stages[0].gib > gpu_gib:
            problems.append(
                f"training needs about {stages[0].gib:.0f} GiB of a {gpu_gib:.0f} GiB GPU: use lora = true, "
                f"gradient_checkpointing = true, or a smaller batch x max_length (grad_accum keeps the batch)"
            )
        disk = 3 * checkpoint_gib(shape, settings, steps) + (
            2 * shape.params / GIB if shape.source == "hub cache" else 0
        )
        if disk > disk_gib:
            problems.append(
                f"checkpoints need about {disk:.0f} GiB of {disk_gib:.0f}: use lora = true or a save_steps "
                f"above the run's steps (only the final bf16 models are kept)"
            )
    if serve == "vllm":
        share = sum(server_shares.values())
        stages.append(
            StageMemory(
                stage="serve (vLLM)", parts={f"{n} server": s * gpu_gib for n, s in server_shares.items()}
            )
        )
        if share > 0.95:
            problems.append(f"the vLLM servers' shares add up to {share:.2f} of the GPU (at most 0.95)")
    for name, port in ports.items():
        busy = port_problem(port)
        if busy:
            problems.append(f"{name}: {busy}")
    found = packages()
    for name in ("torch", "transformers", "trl"):
        if found[name] is None:
            problems.append(f"{name} is not installed (pip install -e '.[train]')")
    if serve == "vllm" and found["vllm"] is None:
        problems.append("vllm is neither installed nor on PATH (install it in a venv of its own)")
    return Plan(model=model, shape=shape, stages=stages, disk_gib=disk, packages=found, problems=problems)
