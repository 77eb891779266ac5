"""Supervised fine-tuning of the critic or the policy with TRL, on a stage's `messages` data.

Each example is split into a prompt (every message but the last) and a completion (the last,
the assistant's), so the loss is on the target alone (the critic's verdict and rationale, the
policy's action). A critic's loss has two terms, as the paper's: the target's tokens (the
rationale loss) plus `verdict_weight` times the loss of the verdict word alone (the verdict loss),
so the one decision that matters is not outweighed by the rationale's many tokens. Prompts are
fitted to the context by `castbench_cast.context` (the rule the server applies too, saved with
the model); what was left out is counted in the figures. Full fine-tuning, or LoRA through peft
on every attention and MLP projection (merged into the saved model, so the checkpoint serves like
any other, or with `merge_lora = false` the adapter alone, served on its base). Checkpoints are
written every `save_steps` and an interrupted training resumes from the last one
(`resume=False`, as `--force` asks, starts from scratch). The saved `model/` holds the weights
(or the adapter), the tokenizer with its chat template and the context rule: it is what
`castbench cast serve` and `collect --critic` load.
"""

from __future__ import annotations

import gc
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from castbench_cast.context import fit_messages, token_counter
from castbench_cast.recipe import TrainStage
from castbench_cast.tiny import tiny_model, tiny_tokenizer

__all__ = ["LORA_MODULES", "TrainError", "lora_config", "save_base", "train"]

LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The layers LoRA adapts: every attention and MLP projection, as the GPU plan sizes them (peft's
default for Qwen adapts q_proj and v_proj alone)."""


class TrainError(ValueError):
    pass


def _rows(data: Path) -> list[dict[str, Any]]:
    rows = []
    for line in (data / "train.jsonl").read_text().splitlines():
        messages = json.loads(line)["messages"]
        rows.append({"prompt": messages[:-1], "completion": messages[-1:]})
    if not rows:
        raise TrainError(f"{data / 'train.jsonl'}: no examples to train on")
    return rows


def _base(settings: TrainStage, rows: list[dict[str, Any]]) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if settings.model == "tiny":
        texts = [message["content"] for row in rows for message in row["prompt"] + row["completion"]]
        tokenizer = tiny_tokenizer(texts, settings.tiny.vocab)
        return tiny_model(tokenizer, settings.tiny, settings.seed), tokenizer
    tokenizer = AutoTokenizer.from_pretrained(settings.model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    # full fine-tuning keeps fp32 master weights (bf16 is autocast): a bf16 weight cannot take an
    # update as small as lr 5e-6 times a gradient. LoRA's base is frozen: its own dtype will do.
    dtype = "auto" if settings.lora else "float32"
    return AutoModelForCausalLM.from_pretrained(settings.model, dtype=dtype), tokenizer


def _last_checkpoint(folder: Path) -> str | None:
    found = sorted(folder.glob("checkpoint-*"), key=lambda path: int(path.name.split("-")[-1]))
    return str(found[-1]) if found else None


def _length(ids: Any) -> int:
    return len(ids["input_ids"] if hasattr(ids, "keys") else ids)


def _fitted(
    rows: list[dict[str, Any]], tokenizer: Any, settings: TrainStage
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The rows with prompts fitted to the context rule; rows that cannot fit are left out."""
    rule = settings.context
    count = token_counter(tokenizer)
    kept = []
    figures = dict.fromkeys(
        (
            "truncated",
            "dropped_messages",
            "dropped_lines",
            "dropped_policy",
            "skipped_long_target",
            "skipped_no_fit",
        ),
        0,
    )
    for row in rows:
        whole = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=True)
        target = _length(whole) - count(row["prompt"])  # the answer's tokens as trained
        if target > rule.max_completion:
            figures["skipped_long_target"] += 1
            continue
        fitted = fit_messages(row["prompt"], count, rule.prompt_budget, rule.keep)
        if not fitted.fits:
            figures["skipped_no_fit"] += 1
            continue
        figures["truncated"] += fitted.truncated
        figures["dropped_messages"] += fitted.dropped_messages
        figures["dropped_lines"] += fitted.dropped_lines
        figures["dropped_policy"] += fitted.dropped_policy
        kept.append({"prompt": fitted.messages, "completion": row["completion"]})
    if not kept:
        raise TrainError(f"no example fits max_length {rule.max_length} ({figures})")
    return kept, figures


def save_base(data: Path, out: Path, settings: TrainStage) -> Path:
    """The model `train` would start from on `data` (the tiny model: the same tokenizer and the
    same seeded weights), saved untrained to `out` with the context rule: the baseline a trained
    checkpoint is compared with, served the same way."""
    rows = _rows(data)
    model, tokenizer = _base(settings, rows)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    settings.context.save(out)
    return out


def _find(values: list[int], word: list[int], first: int, last: int) -> int | None:
    """Where `word` first occurs in `values[first:last + 1]`."""
    return next(
        (start for start in range(first, last - len(word) + 2) if values[start : start + len(word)] == word),
        None,
    )


def _verdict_spans(
    labels: Any, words: list[list[int]], key: list[int] | None = None
) -> list[tuple[int, int, int]]:
    """(row, start, end) of the verdict word among each row's target tokens: the first one after
    the `key` word (`verdict`) when the target holds it, so a rationale written before the
    verdict (`rationale-first`) that says "invalid arguments" is not taken for the verdict;
    else the first verdict word."""
    spans = []
    for row, values in enumerate(labels.tolist()):
        positions = [i for i, token in enumerate(values) if token != -100]
        if not positions:
            continue
        first, last = positions[0], positions[-1]
        at = _find(values, key, first, last) if key else None
        if at is not None:
            first = at + len(key or [])
        found = min(
            (
                (start, start + len(word))
                for word in words
                for start in range(first, last - len(word) + 2)
                if values[start : start + len(word)] == word
            ),
            default=None,
        )
        if found is not None:
            spans.append((row, *found))
    return spans


def verdict_loss(tokenizer: Any, weight: float, accumulation: int) -> Callable[..., Any]:
    """The critic's loss from a forward pass's outputs and the labels: the mean token loss of
    the target plus `weight` times the mean, over the examples, of the verdict word's token loss
    (`valid` / `invalid`, found in the target's tokens: the word is its own pre-token in
    byte-level BPE, so its ids do not depend on what surrounds it)."""
    import torch.nn.functional as functional

    words = [tokenizer.encode(word, add_special_tokens=False) for word in ("invalid", "valid")]
    key = tokenizer.encode("verdict", add_special_tokens=False)

    def compute(outputs: Any, labels: Any, num_items_in_batch: Any = None) -> Any:
        logits = outputs.logits[:, :-1, :].float()
        targets = labels[:, 1:]
        per_token = functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100, reduction="none"
        ).view(targets.shape)
        counted = (targets != -100).sum() if num_items_in_batch is None else num_items_in_batch
        loss = per_token.sum() / max(int(counted), 1)
        spans = _verdict_spans(targets, words, key)
        if weight and spans:
            verdict = sum(per_token[row, start:end].mean() for row, start, end in spans) / len(spans)
            loss = loss + weight * verdict / (accumulation if num_items_in_batch is not None else 1)
        return loss

    return compute


def lora_config(settings: TrainStage) -> Any:
    """The LoRA the recipe asks for: rank `lora_r` (alpha twice that) on `LORA_MODULES`."""
    from peft import LoraConfig

    return LoraConfig(
        r=settings.lora_r,
        lora_alpha=2 * settings.lora_r,
        target_modules=list(LORA_MODULES),
        task_type="CAUSAL_LM",
    )


def _verdict_trainer(loss: Callable[..., Any]) -> type:
    """SFTTrainer with `loss` (see `verdict_loss`) computed from one forward pass (TRL's own
    `compute_loss` takes no such term)."""
    from trl import SFTTrainer

    class VerdictTrainer(SFTTrainer):  # type: ignore[misc]
        def compute_loss(
            self, model: Any, inputs: Any, return_outputs: bool = False, num_items_in_batch: Any = None
        ) -> Any:
            labels = inputs.pop("labels")
            outputs = model(**inputs, use_cache=False)
            value = loss(outputs, labels, num_items_in_batch)
            return (value, outputs) if return_outputs else value

    return VerdictTrainer


def train(
    data: Path, out: Path, settings: TrainStage, key: str, resume: bool = True, verdict_weight: float = 0.0
) -> dict[str, float]:
    """Train on `data/train.jsonl`; the model goes to `out/model`. Returns the run's figures.
    `key` (the stage's: settings and data) names the checkpoint folder, so only a training with
    the same settings on the same data resumes from it; `resume=False` deletes its checkpoints.
    `verdict_weight` (a critic's): the verdict term of the loss (see the module's docstring)."""
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    rows = _rows(data)
    model, tokenizer = _base(settings, rows)
    rows, context = _fitted(rows, tokenizer, settings)
    trainer_class = (
        _verdict_trainer(verdict_loss(tokenizer, verdict_weight, settings.grad_accum))
        if verdict_weight
        else SFTTrainer
    )
    cpu = settings.device == "cpu" or not torch.cuda.is_available()
    peft_config = lora_config(settings) if settings.lora else None
    checkpoints = out / "checkpoints" / key[:16]
    if not resume:
        shutil.rmtree(checkpoints, ignore_errors=True)
    config = SFTConfig(
        output_dir=str(checkpoints),
        learning_rate=settings.lr,
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps,
        per_device_train_batch_size=settings.batch,
        gradient_accumulation_steps=settings.grad_accum,
        max_length=settings.max_length,
        gradient_checkpointing=settings.gradient_checkpointing,
        completion_only_loss=True,
        save_strategy="steps",
        save_steps=settings.save_steps,
        save_total_limit=2,
        logging_steps=10,
        seed=settings.seed,
        data_seed=settings.seed,
        use_cpu=cpu,
        bf16=not cpu and torch.cuda.is_bf16_supported(),
        report_to="none",
        disable_tqdm=True,
    )
    trainer = trainer_class(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    started = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=_last_checkpoint(checkpoints))
    merged = settings.lora and settings.merge_lora
    trained: Any = trainer.model.merge_and_unload() if merged else trainer.model  # type: ignore[union-attr,operator]
    if config.bf16 and not (settings.lora and not settings.merge_lora):
        trained = trained.to(torch.bfloat16)  # served in bf16: half the disk, as the base shipped
    trained.save_pretrained(out / "model")
    tokenizer.save_pretrained(out / "model")
    settings.context.save(out / "model")
    metrics = dict(result.metrics)
    del trainer, trained, model  # the GPU memory goes back before a server is started
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return {
        "examples": len(rows),
        **context,
        "steps": int(result.global_step),
        "train_loss": float(result.training_loss),
        "train_s": round(time.perf_counter() - started, 2),
        **{key: float(value) for key, value in metrics.items() if key.endswith("tokens")},
    }
