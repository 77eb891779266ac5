"""A recipe: one TOML file that fixes a whole CAST pipeline run, so it can be repeated exactly.

Relative paths in it are taken from the recipe's own folder. Every table is optional; what is
left out takes the defaults below (the paper's settings where it gives them: 5 samples per task
at temperature 0.7, learning rate 5e-6, 3 epochs).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from castbench_cast.context import ContextRule

__all__ = [
    "AnnotateStage",
    "CollectCriticStage",
    "CriticDataStage",
    "CollectStage",
    "PaperTable",
    "PolicyDataStage",
    "Recipe",
    "RecipeError",
    "TinyModel",
    "TrainStage",
    "load_recipe",
]


class RecipeError(ValueError):
    """A recipe that cannot be used: the message names the file and the field."""


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CollectStage(_Table):
    domains: str = "retail"
    split: str = "train"
    tasks: list[str] | None = None
    """Task ids; None: the split's tasks (the first `limit` of each domain when set)."""
    limit: int | None = Field(None, ge=1)
    policy: str = "scripted:noisy"
    user: str = "scripted"
    samples: int = Field(5, ge=1, description="trajectories per task (the run's trials)")
    temperature: float = Field(0.7, ge=0)
    """Sampling temperature of a model policy (added to its model string; built-ins ignore it)."""
    seed: int = 0
    concurrency: int = Field(1, ge=1)


class CollectCriticStage(CollectStage):
    """Stage 5: the policy with the trained critic in the loop."""

    rounds: int = Field(3, ge=1, le=10, description="critic verdicts per step at most")
    serve: Literal["transformers", "vllm"] = "transformers"
    """How the checkpoint is served: transformers on this machine's CPU/GPU, or `vllm serve`."""
    port: int = Field(0, ge=0, le=65535)
    """0: a free port chosen when the server starts. The port is never part of the run's
    identity (the served model is named by its weights' digest; its `api_base` is a run-wide
    model setting), so an interrupted collect resumes on any port."""
    max_tokens: int | None = Field(None, ge=1)
    """The critic's answer, tokens at most; None: the length its targets were trained to
    (`train_critic.max_completion`). Less than that is refused: it would cut the answers the
    critic learned to write."""
    gpu_memory: float = Field(0.3, gt=0, le=0.95)
    """Share of the GPU a vLLM-served checkpoint takes (vLLM's own 0.9 leaves no room for the
    teacher's server beside it); the transformers backend ignores it."""


class AnnotateStage(_Table):
    use: Literal["labeler", "llm"] = "labeler"
    """Whose annotations the critic data is built from."""
    llm: str | None = None
    """Model string of the LLM annotation pipeline (`openai/gpt-4.1`, `openai/x?api_base=...`);
    None: the labeler alone."""
    concurrency: int = Field(4, ge=1)
    """Actions the LLM pipeline annotates at once (each action's six calls stay in order)."""


class CriticDataStage(_Table):
    target: Literal["annotation", "verdict", "rationale-first"] = "annotation"
    """The critic's target: the whole annotation with the verdict first (verdict, failure type,
    then the structured rationale: the check that decided and its particulars), the verdict and
    failure type alone (a short answer), or the paper's order, `rationale-first` (the check and
    its particulars, then the verdict and failure type: the answer reasons before it decides).
    `annotation` puts the verdict first because a weak model answering greedily after a
    rationale commits to whatever its rationale drifted to; `bench/cast_learning.py` measures
    the verdict-only critic beside the rationale-first one on the same held-out calls."""
    balance: bool = True
    """Repeat examples of the rarer verdict until both verdicts are as many (seeded by `seed`)."""
    seed: int = 0


class TinyModel(_Table):
    """A model built from a config (no download): for CPU tests and dry runs of the pipeline."""

    hidden: int = Field(64, ge=8)
    layers: int = Field(2, ge=1)
    heads: int = Field(4, ge=1)
    vocab: int = Field(2000, ge=300)
    context: int = Field(4096, ge=256)


class TrainStage(_Table):
    model: str = "tiny"
    """A local path or hub id of a causal LM with a chat template, or `tiny` (`TinyModel`)."""
    tiny: TinyModel = Field(default_factory=TinyModel)
    lora: bool = False
    lora_r: int = Field(16, ge=1)
    merge_lora: bool = True
    """Save LoRA merged into a whole model (served like any other), or the adapter alone (a few
    hundred MB instead of the model's size: the three trained 8B models of the paper's recipe
    would not fit 64 GiB of disk beside the teacher). An adapter is served on its base model:
    transformers loads it through peft, vLLM with `--enable-lora`."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass: long prompts of a large model fit in memory."""
    lr: float = Field(5e-6, gt=0)
    epochs: float = Field(3.0, gt=0)
    max_steps: int = Field(-1, description="stop after this many optimizer steps (-1: epochs decide)")
    batch: int = Field(8, ge=1)
    grad_accum: int = Field(1, ge=1)
    max_length: int = Field(4096, ge=64)
    """Prompt and target, in tokens; prompts are fitted to it by `castbench_cast.context`."""
    max_completion: int = Field(256, ge=1)
    """Tokens kept free for the target (and, when served, the answer); longer targets are skipped."""
    keep: Literal["policy", "conversation"] = "policy"
    """What a prompt too long keeps whole: the policy document (the conversation's oldest part
    goes) or the conversation (the system message goes first: for the tiny stand-in only)."""
    save_steps: int = Field(500, ge=1)
    seed: int = 0
    device: Literal["auto", "cpu"] = "auto"
    verdict_weight: float = Field(1.0, ge=0)
    """A critic's loss: the target's tokens plus this times the verdict word's loss (0: the
    target's tokens alone). Policy training ignores it."""

    @model_validator(mode="after")
    def _fits(self) -> TrainStage:
        if self.max_completion >= self.max_length:
            raise ValueError(
                f"max_completion {self.max_completion} leaves no room in max_length {self.max_length}"
            )
        if self.lora and not self.merge_lora and self.model == "tiny":
            raise ValueError("merge_lora = false needs a base model on disk to serve on (not tiny)")
        if self.model == "tiny" and self.max_length > self.tiny.context:
            raise ValueError(
                f"max_length {self.max_length} exceeds the tiny model's context {self.tiny.context}"
            )
        return self

    @property
    def context(self) -> ContextRule:
        return ContextRule(max_length=self.max_length, max_completion=self.max_completion, keep=self.keep)


class PolicyDataStage(_Table):
    rft: bool = False
    """The paper's control: the successful trajectories of the policy alone (the `collect` run,
    no critic in the loop), whatever `source` says."""
    source: Literal["collect_critic", "collect"] = "collect_critic"
    """Which collected run the CAST trajectories come from (only those with a critique count)."""
    allow_privileged_teacher: bool = False
    """Policy data from a privileged teacher (one that reads the task: `oracle`, `scripted:noisy`)
    teaches the policy answers it could not have known; refused unless this is set."""
    require_critiques: bool = True
    """CAST data keeps only the successes that hold a critique; none at all (a critic that never
    flagged, or never answered readably) is refused unless this is unset: then a warning, and
    every success is kept (`kept_without_critiques`), so a CPU stand-in's chain still runs."""


class PaperTable(_Table):
    """The paper's evaluation (`castbench cast paper`): base / RFT / CAST policy, each without and
    with the trained critic, on each test domain."""

    policy: str
    """The base policy's string (the model the policy stages fine-tune, served)."""
    domains: list[str] = Field(
        default_factory=lambda: ["tau-retail", "tau-airline", "tau-telecom", "tau-telehealth"]
    )
    split: str = "test"
    limit: int | None = Field(None, ge=1, description="tasks per domain (None: all)")
    trials: int = Field(8, ge=1, description="n: trials per task")
    rounds: int = Field(3, ge=1, le=10)
    user: str = "scripted"
    serve: Literal["transformers", "vllm"] = "transformers"
    max_tokens: int | None = Field(None, ge=1)
    """Answer tokens at most of the served checkpoints; None: each one's trained target length."""
    base_critic: str | None = None
    """The untrained critic's model string (the base model the critic was trained from, served):
    the base policy's cells are run with it too, the untrained baseline of the trained critic."""
    policy_gpu_memory: float = Field(0.2, gt=0, le=0.95)
    """GPU share of the served policy checkpoint (vLLM)."""
    critic_gpu_memory: float = Field(0.2, gt=0, le=0.95)
    """GPU share of the served critic checkpoint (vLLM): both run beside the teacher / user
    server and the base policy's, so the shares must leave them room (`gpu_plan` checks the sum)."""


class Recipe(_Table):
    name: str = "cast"
    out: Path = Path("cast-out")
    """Folder of the stages' outputs (one sub-folder each)."""
    db: str | None = None
    """Results store of the collect stages; default: `results.db` in `out`."""
    collect: CollectStage = Field(default_factory=CollectStage)
    annotate: AnnotateStage = Field(default_factory=AnnotateStage)
    critic_data: CriticDataStage = Field(default_factory=CriticDataStage)
    train_critic: TrainStage = Field(default_factory=TrainStage)
    collect_critic: CollectCriticStage = Field(default_factory=CollectCriticStage)
    policy_data: PolicyDataStage = Field(default_factory=PolicyDataStage)
    train_policy: TrainStage = Field(default_factory=TrainStage)
    paper: PaperTable | None = None

    @model_validator(mode="after")
    def _answers_fit(self) -> Recipe:
        trained = self.train_critic.max_completion
        served = [("collect_critic.max_tokens", self.collect_critic.max_tokens)]
        if self.paper is not None:
            served.append(("paper.max_tokens", self.paper.max_tokens))
        for name, tokens in served:
            if tokens is not None and tokens < trained:
                raise ValueError(
                    f"{name} {tokens} is below train_critic.max_completion {trained}: the served critic's "
                    f"answers would be cut where training taught it to go on (leave it out to serve "
                    f"the trained length)"
                )
        return self

    @property
    def store_url(self) -> str:
        return self.db or f"sqlite:///{(self.out / 'results.db').resolve()}"

    def stage_dir(self, stage: str) -> Path:
        return self.out / stage


def load_recipe(path: str | Path) -> Recipe:
    """The recipe at `path`. `[collect_critic]` inherits every `[collect]` setting it does not set
    itself (the policy, user, domains, tasks...), as a reader of the recipe expects."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RecipeError(f"recipe {path}: cannot read: {exc}") from exc
    if isinstance(raw.get("collect"), dict):
        raw["collect_critic"] = {**raw["collect"], **(raw.get("collect_critic") or {})}
    try:
        recipe = Recipe.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"field '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}" for err in exc.errors()
        )
        raise RecipeError(f"recipe {path}: {problems}") from exc
    out = recipe.out if recipe.out.is_absolute() else path.parent / recipe.out
    return recipe.model_copy(update={"out": out.resolve()})
