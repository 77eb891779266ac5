"""A tiny chat model built from a config, with a tokenizer trained on the training texts: no
download, seconds to train on a CPU. It learns the shape of the targets, not the task; it exists
so the whole pipeline (train, save, serve, act in `castbench eval`) runs anywhere."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # importable without pydantic: bench/cast_gpu_check.py runs on a bare GPU image
    from castbench_cast.recipe import TinyModel

__all__ = ["CHAT_TEMPLATE", "tiny_model", "tiny_tokenizer"]

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['role'] == 'assistant' %}{% generation %}{{ message['content'] }}<|im_end|>"
    "{% endgeneration %}{% else %}{{ message['content'] }}<|im_end|>{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML, with the assistant's part marked for TRL's assistant-only loss."""
_SPECIAL = ["<unk>", "<|pad|>", "<|im_start|>", "<|im_end|>"]


def tiny_tokenizer(texts: Iterable[str], vocab: int) -> Any:
    """A byte-level BPE tokenizer trained on `texts` (deterministic for the same texts)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=_SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(sorted(set(texts)), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", pad_token="<|pad|>", eos_token="<|im_end|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_model(tokenizer: Any, shape: TinyModel, seed: int) -> Any:
    """A Qwen3-architecture causal LM of the given shape, initialised from `seed`."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden,
        intermediate_size=shape.hidden * 2,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.heads,
        head_dim=shape.hidden // shape.heads,
        max_position_embeddings=shape.context,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    return Qwen3ForCausalLM(config)
