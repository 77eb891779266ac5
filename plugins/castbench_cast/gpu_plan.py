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

from castbench_cast.recipe import Recipe, TrainStage

__all__ = [
    "ModelShape",
    "Plan",
    "StageMemory",
    "checkpoint_gib",
    "model_shape",
    "packages",
    "recipe_plan",
    "served_model",
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
    """Where the shape was read: a local folder, the hub cache, the tiny config, or the published
    config of a model the run needs but this machine does not hold yet (`PUBLISHED`)."""
    intermediate: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    weight_bytes: float = 2.0
    """Bytes a parameter takes on disk and when served: 2 (bf16), 1 (FP8 checkpoints)."""

    @property
    def kv_bytes_per_token(self) -> int:
        """The KV cache a served token holds (bf16 keys and values of every layer)."""
        heads = self.kv_heads or 8
        return 2 * self.layers * heads * (self.head_dim or self.hidden // 32) * 2

    @property
    def adapter_params(self) -> int:
        """LoRA parameters per rank unit over the 7 projections of every layer (in + out sizes)."""
        inner = self.intermediate or 3 * self.hidden
        kv = (self.kv_heads or 8) * (self.head_dim or self.hidden // 32)
        per_layer = (2 * self.hidden) * 2 + (self.hidden + kv) * 2 + 3 * (self.hidden + inner)
        return per_layer * self.layers


def _published(params: float, hidden: int, layers: int, intermediate: int, kv_heads: int) -> ModelShape:
    return ModelShape(
        params=int(params),
        hidden=hidden,
        layers=layers,
        vocab=151936,
        intermediate=intermediate,
        kv_heads=kv_heads,
        head_dim=128,
        source="published config (not on this machine: download it before the run)",
    )


PUBLISHED = {
    "Qwen/Qwen3-4B": _published(4.02e9, 2560, 36, 9728, 8),
    "Qwen/Qwen3-8B": _published(8.19e9, 4096, 36, 12288, 8),
    "Qwen/Qwen3-32B": _published(32.8e9, 5120, 64, 25600, 8),
}
"""The shapes of the paper's models from their published `config.json` (Qwen3 model cards), so
a plan can be made before anything is downloaded; `-FP8` variants share them at 1 byte a weight."""


def published_shape(model: str) -> ModelShape | None:
    base, fp8 = (model[: -len("-FP8")], True) if model.endswith("-FP8") else (model, False)
    shape = PUBLISHED.get(base)
    if shape is None:
        return None
    return shape.model_copy(update={"weight_bytes": 1.0}) if fp8 else shape


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
        if (published := published_shape(model)) is not None:
            return published, None
        return None, (
            f"{model}: not on this machine ({type(exc).__name__}); download it before the run "
            f"(`huggingface-cli download {model}`): the run sets HF_HUB_OFFLINE=1"
        )
    with torch.device("meta"):
        meta = AutoModelForCausalLM.from_config(config)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    source = "local folder" if Path(model).exists() else "hub cache"
    quantized = getattr(config, "quantization_config", None) or {}
    return ModelShape(
        params=sum(p.numel() for p in meta.parameters()),
        hidden=int(text.hidden_size),
        layers=int(text.num_hidden_layers),
        vocab=int(text.vocab_size),
        intermediate=getattr(text, "intermediate_size", None),
        kv_heads=getattr(text, "num_key_value_heads", None),
        head_dim=getattr(text, "head_dim", None),
        weight_bytes=1.0 if "fp8" in str(quantized.get("quant_method", "")).lower() else 2.0,
        source=source,
    ), None


def training_memory(stage: str, shape: ModelShape, settings: TrainStage) -> StageMemory:
    tokens = settings.batch * settings.max_length
    if settings.lora:
        adapters = settings.lora_r * shape.adapter_params  # q k v o gate up down, every layer
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
    """Disk a train stage writes: intermediate checkpoints (at most 2 kept) and the saved model
    (bf16 weights, or the adapter alone with `merge_lora = false`)."""
    saved = min(2, steps // settings.save_steps) if steps > 0 else 2
    adapter = settings.lora_r * shape.adapter_params
    per_checkpoint = adapter * 12 if settings.lora else 12 * shape.params
    final = 4 * adapter if settings.lora and not settings.merge_lora else 2 * shape.params
    return (saved * per_checkpoint + final) / GIB


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


class Server(BaseModel):
    """A model served on the GPU during some phases of the run, with its share of the GPU."""

    role: str
    model: str
    share: float
    context: int
    shape: ModelShape | None = None

    def problem(self, gpu_gib: float) -> str | None:
        """Why its share cannot hold its weights and one sequence of its context's KV cache."""
        if self.shape is None:
            return None
        weights = self.shape.weight_bytes * self.shape.params / GIB
        kv = self.shape.kv_bytes_per_token * self.context / GIB
        room = self.share * gpu_gib * 0.9  # vLLM keeps some of its share for activations
        if weights + kv > room:
            return (
                f"{self.role} server ({self.model}): {weights:.0f} GiB of weights and {kv:.1f} GiB of "
                f"KV cache for one {self.context}-token sequence exceed its {self.share:.2f} share "
                f"({room:.0f} GiB usable)"
            )
        return None

    def sequences(self, gpu_gib: float) -> int | None:
        """Full-context sequences its KV cache holds at once (what concurrency it can serve)."""
        if self.shape is None:
            return None
        free = self.share * gpu_gib * 0.9 - self.shape.weight_bytes * self.shape.params / GIB
        return max(0, int(free * GIB // (self.shape.kv_bytes_per_token * self.context)))


class Phase(BaseModel):
    name: str
    servers: list[str]
    training: StageMemory | None = None

    def gib(self, servers: dict[str, Server], gpu_gib: float) -> float:
        held = sum(servers[name].share for name in self.servers) * gpu_gib
        return held + (self.training.gib if self.training is not None else 0.0)


class RecipePlan(BaseModel):
    """A whole recipe on one GPU: which servers are up in each phase, training beside them, disk."""

    servers: dict[str, Server]
    phases: list[Phase]
    disk: dict[str, float]
    """GiB per item: downloaded models, trained outputs."""
    problems: list[str]
    to_do: list[str]
    """What the run needs done first (downloads), not a reason it cannot run."""

    @property
    def disk_gib(self) -> float:
        return sum(self.disk.values())


def served_model(spec: str) -> str | None:
    """The model a served-model string names (`hosted_vllm/Qwen/Qwen3-32B?api_base=...` ->
    `Qwen/Qwen3-32B`); None for built-ins and hosted APIs (nothing on this GPU)."""
    name = spec.partition("?")[0]
    provider, _, model = name.partition("/")
    return model if provider in ("hosted_vllm", "vllm") and model else None


def recipe_plan(
    recipe: Recipe, *, gpu_gib: float, disk_gib: float, teacher_share: float, base_share: float
) -> RecipePlan:
    """The paper's recipe (`castbench cast paper`) on one GPU of `gpu_gib` and a disk of `disk_gib`.

    The teacher's server (also the simulated user, when both name one model) stays up through the
    whole run with `teacher_share` of the GPU; training runs beside it; the trained critic's
    server joins it for collect-critic; the grid adds the base policy's server (`base_share`,
    which also answers as the untrained critic) and the served checkpoints (`[paper]`'s
    `policy_gpu_memory` and `critic_gpu_memory`)."""
    paper = recipe.paper
    problems: list[str] = []
    to_do: list[str] = []
    servers: dict[str, Server] = {}
    critic_context = recipe.train_critic.max_length
    policy_context = recipe.train_policy.max_length

    def add(role: str, spec: str | None, share: float, context: int) -> str | None:
        model = served_model(spec) if spec else None
        if model is None:
            return None
        for name, server in servers.items():
            if server.model == model:
                server.context = max(server.context, context)
                return name
        shape, missing = model_shape(model, recipe.train_critic)
        if missing:
            problems.append(missing)
        servers[role] = Server(role=role, model=model, share=share, context=context, shape=shape)
        return role

    teacher = add("teacher", recipe.collect.policy, teacher_share, max(critic_context, policy_context))
    user = add("user", (paper.user if paper else None) or recipe.collect.user, teacher_share, policy_context)
    critic_gpu = recipe.collect_critic.gpu_memory
    critic_model = recipe.train_critic.model
    critic_shape, _ = model_shape(critic_model, recipe.train_critic)
    if recipe.collect_critic.serve == "vllm":
        servers["critic checkpoint"] = Server(
            role="critic checkpoint",
            model=f"trained {critic_model}",
            share=critic_gpu,
            context=critic_context,
            shape=critic_shape,
        )
    base = None
    if paper is not None:
        base = add("base policy", paper.policy, base_share, policy_context)
        add("base critic", paper.base_critic, base_share, critic_context)
        if paper.serve == "vllm":
            policy_shape, _ = model_shape(recipe.train_policy.model, recipe.train_policy)
            servers["policy checkpoint"] = Server(
                role="policy checkpoint",
                model=f"trained {recipe.train_policy.model}",
                share=paper.policy_gpu_memory,
                context=policy_context,
                shape=policy_shape,
            )
            servers["grid critic checkpoint"] = Server(
                role="grid critic checkpoint",
                model=f"trained {critic_model}",
                share=paper.critic_gpu_memory,
                context=critic_context,
                shape=critic_shape,
            )
    resident = list(dict.fromkeys(name for name in (teacher, user) if name is not None))
    phases = [Phase(name="collect", servers=resident)]
    for stage, settings in (
        ("train-critic", recipe.train_critic),
        ("train-policy", recipe.train_policy),
        ("train-policy-rft", recipe.train_policy),
    ):
        shape, _ = model_shape(settings.model, settings)
        training = training_memory(stage, shape, settings) if shape is not None else None
        phases.append(Phase(name=stage, servers=resident, training=training))
        if stage == "train-critic":
            with_critic = [*resident, *(["critic checkpoint"] if "critic checkpoint" in servers else [])]
            phases.append(Phase(name="collect-critic", servers=with_critic))
    if paper is not None:
        grid = [*([user] if user else []), *([base] if base else [])]
        grid += [name for name in ("policy checkpoint", "grid critic checkpoint") if name in servers]
        phases.append(Phase(name="paper grid", servers=list(dict.fromkeys(grid))))
    for phase in phases:
        share = round(sum(servers[name].share for name in phase.servers), 6)
        if share > 0.95:
            problems.append(
                f"{phase.name}: the servers' shares add up to {share:.2f} of the GPU (at most 0.95)"
            )
        if phase.gib(servers, gpu_gib) > gpu_gib:
            problems.append(
                f"{phase.name}: about {phase.gib(servers, gpu_gib):.0f} GiB of a {gpu_gib:.0f} GiB GPU "
                f"(servers {', '.join(phase.servers) or 'none'} and training)"
            )
    for server in servers.values():
        if (problem := server.problem(gpu_gib)) is not None:
            problems.append(problem)
    disk: dict[str, float] = {}
    downloads = {
        server.model: server.shape for server in servers.values() if not server.model.startswith("trained ")
    }
    for settings in (recipe.train_critic, recipe.train_policy):
        downloads.setdefault(settings.model, model_shape(settings.model, settings)[0])
    for model, shape in downloads.items():
        if shape is None or model == "tiny":
            continue
        disk[f"download {model}"] = shape.weight_bytes * shape.params / GIB
        if shape.source.startswith("published"):
            to_do.append(
                f"download {model} (about {disk[f'download {model}']:.0f} GiB): "
                f"`huggingface-cli download {model}`"
            )
    for stage, settings in (
        ("train-critic", recipe.train_critic),
        ("train-policy", recipe.train_policy),
        ("train-policy-rft", recipe.train_policy),
    ):
        shape, _ = model_shape(settings.model, settings)
        if shape is not None:
            disk[f"{stage} output"] = checkpoint_gib(shape, settings, settings.max_steps)
    total = sum(disk.values())
    if total > disk_gib:
        problems.append(
            f"disk: about {total:.0f} GiB of {disk_gib:.0f} "
            f"(an FP8 teacher, merge_lora = false, or a smaller model)"
        )
    return RecipePlan(servers=servers, phases=phases, disk=disk, problems=problems, to_do=to_do)
