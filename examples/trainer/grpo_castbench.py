"""GRPO (TRL) on castbench's domains through the step-wise `Environment`, on CPU with a tiny model.

    pip install -e '.[service,train]'          # castbench's training stack (torch CPU, transformers, trl)
    python examples/trainer/grpo_castbench.py --steps 3 --tasks 4

Each prompt is the policy's first view of a trial (the domain's tools and the customer's
opening); a completion is the model's first action, as JSON: `{"tool": NAME, "arguments": {...}}`
or `{"reply": "..."}`. The reward comes from castbench: the trial is reset, the action stepped,
and the labeler's verdict on it (`Environment(labels=True)`: valid 1.0, invalid 0.0, a reply
(not labelled) 0.0, unusable output -0.5) is the reward, so what the model learns is what
castbench grades. A real run puts a real model here (on a GPU) and steps whole trials with
`env.step` until `result.done`, using `result.reward`.

The model here is built from a config (Qwen3 architecture, 2 layers) with a byte-level BPE
tokenizer trained on the prompts: nothing is downloaded; it only shows the path.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from datasets import Dataset  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from castbench import Environment  # noqa: E402
from castbench.agents import (  # noqa: E402
    MalformedAction,
    PolicyView,  # noqa: E402
    ReplyAction,
    ToolCallAction,
    UserTurn,
)
from castbench.domain import load_domain  # noqa: E402

REWARD = {"valid": 1.0, "invalid": 0.0, "unknown": 0.0}
UNUSABLE = -0.5


def prompt(view: PolicyView) -> str:
    """What the model sees: the tool names and the customer's opening (its public view)."""
    tools = ", ".join(schema["function"]["name"] for schema in view.briefing.tools)
    opening = next(event.text for event in view.conversation if isinstance(event, UserTurn))
    return f"Tools: {tools}\nCustomer: {opening}\nAction (JSON):"


def parse(completion: str) -> Any:
    """The model's text as an action; anything else is malformed (its failure, as in eval)."""
    try:
        data = json.loads(completion.strip())
    except json.JSONDecodeError:
        return MalformedAction(raw=completion[:200], reason="not JSON")
    if isinstance(data, dict) and isinstance(data.get("tool"), str):
        arguments = data.get("arguments")
        return ToolCallAction(name=data["tool"], arguments=arguments if isinstance(arguments, dict) else {})
    if isinstance(data, dict) and isinstance(data.get("reply"), str):
        return ReplyAction(text=data["reply"])
    return MalformedAction(raw=completion[:200], reason="neither a tool call nor a reply")


class CastbenchReward:
    """TRL reward function: each completion stepped in a fresh trial of its prompt's task."""

    __name__ = "castbench_label"

    def __init__(self, domain: str, seed: int) -> None:
        self.env = Environment(labels=True)
        self.domain, self.seed = domain, seed
        self.trials = 0

    def __call__(self, prompts: list[str], completions: list[str], task: list[str], **_: Any) -> list[float]:
        rewards = []
        for completion, task_id in zip(completions, task, strict=True):
            self.env.reset(self.domain, task_id, trial=self.trials, seed=self.seed)
            self.trials += 1
            action = parse(completion)
            result = self.env.step(action)
            if isinstance(action, MalformedAction) or result.label is None:
                rewards.append(UNUSABLE)
            else:
                rewards.append(REWARD[result.label.label])
        return rewards


def tiny_model(texts: list[str]) -> tuple[Qwen3ForCausalLM, PreTrainedTokenizerFast]:
    """A 2-layer Qwen3 and a tokenizer trained on `texts` (no download)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    specials = ["<pad>", "<eos>"]
    tokenizer.train_from_iterator(
        texts + ['{"tool": "", "arguments": {}} {"reply": ""}'],
        trainers.BpeTrainer(
            vocab_size=512, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="<eos>")
    config = Qwen3Config(
        vocab_size=len(fast),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=1024,
        pad_token_id=fast.pad_token_id,
        eos_token_id=fast.eos_token_id,
        bos_token_id=fast.eos_token_id,
    )
    return Qwen3ForCausalLM(config), fast


def train(domain: str, tasks: int, steps: int, seed: int, output_dir: str) -> list[dict[str, Any]]:
    """Run GRPO for `steps` steps; the trainer's log (one entry per step, with the reward)."""
    env = Environment()
    rows = []
    for task in load_domain(domain).tasks("test")[:tasks]:
        view = env.reset(domain, task.id, trial=0, seed=seed)
        assert view is not None
        rows.append({"prompt": prompt(view), "task": task.id})
    model, tokenizer = tiny_model([row["prompt"] for row in rows])
    args = GRPOConfig(
        output_dir=output_dir,
        max_steps=steps,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=24,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=seed,
        bf16=False,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=CastbenchReward(domain, seed),
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    trainer.train()
    return [entry for entry in trainer.state.log_history if "reward" in entry]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="retail")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for entry in train(args.domain, args.tasks, args.steps, args.seed, folder):
            print(f"step {entry['step']}: reward {entry['reward']:.3f}, loss {entry.get('loss', 0.0):.4f}")


if __name__ == "__main__":
    main()
