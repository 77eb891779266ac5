"""One prepared GPU check of the CAST plugin, for a lent machine with nothing but torch,
transformers and tokenizers (no pydantic, trl, datasets, peft, hub or vLLM there).

Two steps:

1. `prepare` (here, on a CPU, with the `train` extra): the CAST stages the learning bench runs
   (collect with the teacher, annotate, critic data) on retail train tasks outside
   `--holdout-families` held-out families; then the teacher alone on retail test tasks, split
   into `in-distribution` (families trained on) and `held-out families` (never trained on).
   Every held-out tool call the labeler judged is written with the critic's exact input, its
   label and the verdicts of the baselines (majority per tool, per (previous action, tool), the
   rules critic, the bag of words: `castbench_cast.baselines`), learned from the same
   annotations. Also the memory plan's estimate (`castbench_cast.gpu_plan`) for one LoRA step of
   Qwen3-8B at 8,192 tokens. Everything goes to `--data` (a few MB of JSON lines).
2. `run` (on the GPU, or `--device cpu --shrink` for the smoke test): a pre-flight that fails in
   seconds on anything missing (imports, CUDA, memory, the data), then
   (A) the tiny critic (a Qwen3-architecture model built from a config, tokenizer trained on the
   train texts) trained on `--device` with a `--window`-token input (1,536 by default) on the
   annotations, once per `--targets` order with the same data, steps and seed: `verdict` (the
   verdict and failure type alone) and `rationale-first` (the paper's order: the check and its
   explanation, then the verdict and failure type); loss = mean target token loss +
   `--verdict-weight` x the token loss of the verdict word after the `verdict` key. Each is
   evaluated on the same held-out calls as the baselines: the verdict-only critic's verdict is
   the likelier of "valid" / "invalid" after `{"verdict": "` (a forced choice); the
   rationale-first critic writes its rationale greedily (at most `--rationale-tokens`) until it
   writes the `"verdict": "` key, and its verdict is then the same forced choice (a rationale
   that never reaches the key within the limit counts as a pass, and is counted as
   `unreadable`). The table prints MCC, false-flag rate and detection with 95% intervals
   resampling tasks, per split, with `beats_bow` in words for each trained critic and what the
   rationale adds (the rationale-first critic's MCC interval against the verdict-only one's).
   The input is the critic's user message (conversation and proposed action); the system
   prompt (policy and tools, the same for every call) is left out and the oldest tokens go
   first when it is longer than the window.
   (B) one LoRA step (rank 16 on the 7 projections of every layer, hand-rolled: no peft) of a
   model with Qwen3-8B's published shape, built from its config with random weights in bf16,
   at `--lora-tokens` (8,192) tokens with gradient checkpointing, printing measured peak memory
   and tokens/s beside the plan's estimate.

    python bench/cast_gpu_check.py prepare --data cast-gpu-data          # here, a few minutes
    python bench/cast_gpu_check.py run --data cast-gpu-data              # the GPU, < 9 minutes
    python bench/cast_gpu_check.py run --data cast-gpu-data --device cpu --shrink   # CPU smoke

`cast-gpu-data/` is git-ignored: name it in the device run's `carry`. docs/training.md has the
exact commands.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parents[1]
QWEN3_8B = {
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}
"""Qwen3-8B's published config.json (the parts that size it)."""
SHRUNK = {
    **QWEN3_8B,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 1000,
}
LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
SPLITS = ("in-distribution", "held-out families")
_ABSENT = ("pydantic", "sqlmodel", "trl", "datasets", "peft", "vllm", "castbench")


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


# ---------------------------------------------------------------- prepare (CPU, castbench)


def prepare(args: argparse.Namespace) -> int:
    from castbench import ResultsStore, evaluate
    from castbench.agents import ToolCallAction, critic_messages
    from castbench_cast.annotations import annotated_moments, read_annotations
    from castbench_cast.baselines import BASELINES, BOW, BagOfWords, Lookup, _rules
    from castbench_cast.gpu_plan import published_shape, training_memory
    from castbench_cast.learning import _recipe, held_out_families, split_tasks
    from castbench_cast.pipeline import Pipeline
    from castbench_cast.recipe import TinyModel, TrainStage

    out: Path = args.data.resolve()
    train = TrainStage(
        model="tiny", tiny=TinyModel(), max_length=args.window, max_completion=96, seed=args.seed
    )
    families = held_out_families(args.holdout_families, args.seed)
    teacher = "scripted:noisy?p=0.5"
    recipe = _recipe(
        out / "work", train, args.train_tasks, 1, teacher, args.seed, "annotation", True, families
    )
    pipeline = Pipeline(recipe, log=lambda line: print(line, file=sys.stderr))
    pipeline.collect()
    pipeline.annotate()
    pipeline.critic_data()
    records = pipeline.records("collect")
    annotations = read_annotations(pipeline.folder("annotate") / "annotations.jsonl")
    lookup, bow = Lookup(records, annotations), BagOfWords(records, annotations)
    (out / "train.jsonl").write_text((pipeline.folder("critic-data") / "train.jsonl").read_text())
    rows = []
    for name, held_out in zip(SPLITS, (False, True), strict=True):
        tasks = split_tasks("test", args.test_tasks, families, held_out=held_out)
        result = evaluate(
            db=recipe.store_url,
            domains="retail",
            split="test",
            tasks=tasks,
            policy=teacher,
            user="scripted",
            trials=1,
            seed=args.seed + 1,
        )
        for record, moment in annotated_moments(ResultsStore(recipe.store_url).trials(result.outcome.run_id)):
            label = moment.proposal.label
            if label is None or label.label not in ("valid", "invalid"):
                continue
            assert isinstance(moment.proposal.action, ToolCallAction)
            user = critic_messages("", moment.history, moment.proposal.action)[-1]["content"]
            verdicts = {
                BASELINES[0]: lookup.verdict(BASELINES[0], moment),
                BASELINES[1]: lookup.verdict(BASELINES[1], moment),
                BASELINES[2]: _rules(record, moment),
                BOW: bow.verdict(record, moment),
            }
            rows.append(
                {
                    "split": name,
                    "task": record.task_id,
                    "input": user,
                    "label": label.label,
                    "baselines": verdicts,
                }
            )
    with (out / "held_out.jsonl").open("w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    lora = TrainStage(model="Qwen/Qwen3-8B", lora=True, batch=1, max_length=8192, gradient_checkpointing=True)
    shape = published_shape("Qwen/Qwen3-8B")
    assert shape is not None
    estimate = training_memory("LoRA step", shape, lora)
    (out / "plan.json").write_text(
        json.dumps(
            {
                "model": "Qwen/Qwen3-8B",
                "tokens": 8192,
                "gib": estimate.gib,
                "parts": estimate.parts,
                "families_held_out": families,
            }
        )
    )
    print(
        json.dumps(
            {
                "data": str(out),
                "train_rows": len((out / "train.jsonl").read_text().splitlines()),
                "held_out_calls": len(rows),
                "families_held_out": families,
                "plan_gib": estimate.gib,
            }
        )
    )
    return 0


# ---------------------------------------------------------------- run (GPU image: torch only)


def preflight(args: argparse.Namespace) -> dict[str, Any]:
    """Everything the run needs, checked in seconds; one `error:` line on the first missing."""
    found: dict[str, Any] = {"python": sys.version.split()[0]}
    # the carried data first: a missing file is refused before torch is imported (seconds)
    for name in ("train.jsonl", "held_out.jsonl", "plan.json"):
        path = args.data / name
        if not path.is_file() or path.stat().st_size == 0:
            fail(
                f"preflight: {path} missing: run `python bench/cast_gpu_check.py prepare --data {args.data}` "
                "on a machine with the train extra, and carry the folder"
            )
    held = [json.loads(line) for line in (args.data / "held_out.jsonl").read_text().splitlines()]
    if not {row["split"] for row in held} >= {SPLITS[0]}:
        fail(f"preflight: {args.data / 'held_out.jsonl'} holds no in-distribution calls")
    for module in ("torch", "transformers", "tokenizers", "numpy"):
        try:
            found[module] = __import__(module).__version__
        except ImportError as exc:
            fail(f"preflight: {module} is not importable ({exc})")
    import torch

    try:
        from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM  # noqa: F401
    except ImportError as exc:
        fail(f"preflight: transformers {found['transformers']} has no Qwen3 ({exc})")
    if args.device == "cuda":
        if not torch.cuda.is_available():
            fail("preflight: no CUDA device (give --device cpu --shrink for the CPU smoke test)")
        free, total = torch.cuda.mem_get_info()
        found["gpu"] = torch.cuda.get_device_name(0)
        found["gpu_free_gib"] = round(free / 2**30, 1)
        if not args.shrink and free < 40 * 2**30:
            fail(f"preflight: {free / 2**30:.1f} GiB free on the GPU, the LoRA step needs about 40")
    sys.path.insert(0, str(ROOT / "plugins"))
    try:
        from castbench_cast.tiny import tiny_model, tiny_tokenizer  # noqa: F401  (torch + transformers only)
    except ImportError as exc:
        fail(f"preflight: castbench_cast.tiny not importable without the train extra ({exc})")
    print("preflight: OK " + json.dumps(found), flush=True)
    return found


TRAINED = {
    "verdict": "trained critic, verdict only",
    "rationale-first": "trained critic, rationale + verdict",
}
"""The critics the run trains (`--targets`), by target order, and their rows in the table."""
KEY = '"verdict": "'


def reorder(target: str, order: str) -> str:
    """The annotation `target` (JSON: verdict, failure type, then the rationale's check and
    explanation) in the order `order` trains: `verdict` the verdict and failure type alone,
    `rationale-first` the rationale, then the verdict and failure type (the paper's order)."""
    annotation = json.loads(target)
    decision = {"verdict": annotation["verdict"], "failure_type": annotation["failure_type"]}
    if order == "verdict":
        return json.dumps(decision)
    rationale = {key: value for key, value in annotation.items() if key not in decision}
    if order == "rationale-first":
        return json.dumps({**rationale, **decision})
    fail(f"--targets {order!r}: verdict or rationale-first")


def _encode(tokenizer: Any, user: str, target: str | None, window: int) -> tuple[list[int], int]:
    """Prompt ids (the user message's last tokens within the window) + target ids; where the
    target starts."""
    head = tokenizer.encode("<|im_start|>user\n", add_special_tokens=False)
    tail = tokenizer.encode("<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)
    body = tokenizer.encode(user, add_special_tokens=False)
    answer = tokenizer.encode(target + "<|im_end|>", add_special_tokens=False) if target is not None else []
    room = window - len(head) - len(tail) - len(answer)
    body = body[-room:] if room > 0 else []
    prompt = head + body + tail
    return prompt + answer, len(prompt)


def _find(tokens: list[int], word: list[int], start: int) -> int | None:
    return next(
        (i for i in range(start, len(tokens) - len(word) + 1) if tokens[i : i + len(word)] == word), None
    )


def verdict_span(
    tokens: list[int], start: int, words: dict[str, list[int]], key: list[int]
) -> tuple[int, int] | None:
    """Where the verdict word is among the target's tokens (from `start`): the first `valid` /
    `invalid` after the `verdict` key, so that a rationale written before the verdict that says
    "invalid arguments" is never taken for it."""
    at = _find(tokens, key, start)
    first = start if at is None else at + len(key)
    found = [(i, i + len(w)) for w in words.values() if (i := _find(tokens, w, first)) is not None]
    return min(found) if found else None


def train_critic(
    args: argparse.Namespace, order: str, tokenizer: Any, examples: list[tuple[str, str]]
) -> Any:
    """The tiny critic trained on `examples` in the target order `order`; (model, figures)."""
    import torch
    import torch.nn.functional as functional

    from castbench_cast.tiny import tiny_model

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    shape = argparse.Namespace(hidden=args.hidden, layers=args.layers, heads=4, context=args.window + 64)
    model = tiny_model(tokenizer, shape, args.seed).to(device)
    encoded = [_encode(tokenizer, user, reorder(target, order), args.window) for user, target in examples]
    words = {word: tokenizer.encode(word, add_special_tokens=False) for word in ("valid", "invalid")}
    key = tokenizer.encode("verdict", add_special_tokens=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    pad = tokenizer.pad_token_id
    draw = random.Random(args.seed)  # the same batches for every order
    started = time.perf_counter()
    losses = []
    model.train()
    for _ in range(args.steps):
        batch = [encoded[draw.randrange(len(encoded))] for _ in range(args.batch)]
        length = max(len(ids) for ids, _ in batch)
        ids = torch.full((len(batch), length), pad, dtype=torch.long)
        labels = torch.full((len(batch), length), -100, dtype=torch.long)
        mask = torch.zeros((len(batch), length), dtype=torch.long)
        verdict_at: list[tuple[int, int, int]] = []
        for row, (tokens, start) in enumerate(batch):
            ids[row, : len(tokens)] = torch.tensor(tokens)
            labels[row, start : len(tokens)] = torch.tensor(tokens[start:])
            mask[row, : len(tokens)] = 1
            span = verdict_span(tokens, start, words, key)
            if span is not None:
                verdict_at.append((row, *span))
        ids, labels, mask = ids.to(device), labels.to(device), mask.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        targets = labels[:, 1:]
        per_token = functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100, reduction="none"
        ).view(targets.shape)
        loss = per_token.sum() / (targets != -100).sum().clamp(min=1)
        if args.verdict_weight and verdict_at:
            verdict = sum(per_token[r, s - 1 : e - 1].mean() for r, s, e in verdict_at) / len(verdict_at)
            loss = loss + args.verdict_weight * verdict
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return model, {
        "train_s": round(time.perf_counter() - started, 1),
        "examples": len(examples),
        "loss_first": round(losses[0], 3),
        "loss_last": round(sum(losses[-10:]) / min(10, len(losses)), 3),
    }


def judge(
    args: argparse.Namespace, order: str, model: Any, tokenizer: Any, held: list[dict[str, Any]]
) -> Any:
    """The critic's verdict on each held-out call ("flag" / "pass") and how many it left
    unreadable (a rationale that never reached the verdict key within `--rationale-tokens`)."""
    import torch

    device = torch.device(args.device)
    words = {word: tokenizer.encode(word, add_special_tokens=False) for word in ("valid", "invalid")}
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    verdicts, unreadable = [], 0
    with torch.no_grad():
        for row in held:
            prompt, _ = _encode(tokenizer, row["input"], None, args.window - args.rationale_tokens - 16)
            if order == "verdict":
                prefix = "{" + KEY
            else:  # the rationale, greedily, up to the verdict key
                written: list[int] = []
                out = model(input_ids=torch.tensor([prompt], device=device), use_cache=True)
                prefix = None
                for _ in range(args.rationale_tokens):
                    token = int(out.logits[0, -1].argmax())
                    if token == end:
                        break
                    written.append(token)
                    text = tokenizer.decode(written)
                    if KEY in text:
                        prefix = text[: text.index(KEY) + len(KEY)]
                        break
                    out = model(
                        input_ids=torch.tensor([[token]], device=device),
                        past_key_values=out.past_key_values,
                        use_cache=True,
                    )
                if prefix is None:
                    unreadable += 1
                    verdicts.append("pass")
                    continue
            head = prompt + tokenizer.encode(prefix, add_special_tokens=False)
            scores = {}
            for word, w in words.items():
                ids = torch.tensor([head + w], device=device)
                logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), dim=-1)
                scores[word] = sum(float(logp[len(head) - 1 + i, t]) for i, t in enumerate(w))
            verdicts.append("flag" if scores["invalid"] > scores["valid"] else "pass")
    return verdicts, unreadable


def critic_step(args: argparse.Namespace) -> dict[str, Any]:
    """Each `--targets` order trained with the same tokenizer, data, steps and seed, and judged on
    the same held-out calls."""
    from castbench_cast.tiny import tiny_tokenizer

    random.seed(args.seed)
    rows = [json.loads(line)["messages"] for line in (args.data / "train.jsonl").read_text().splitlines()]
    examples = [(row[-2]["content"], row[-1]["content"]) for row in rows]
    held = [json.loads(line) for line in (args.data / "held_out.jsonl").read_text().splitlines()]
    texts = [
        text for user, target in examples for text in (user, *(reorder(target, o) for o in args.targets))
    ]
    tokenizer = tiny_tokenizer(texts, args.vocab)
    critics: dict[str, list[str]] = {}
    trained: dict[str, Any] = {}
    for order in args.targets:
        model, figures = train_critic(args, order, tokenizer, examples)
        verdicts, unreadable = judge(args, order, model, tokenizer, held)
        critics[TRAINED[order]] = verdicts
        trained[TRAINED[order]] = {**figures, "unreadable": unreadable}
        print(
            f"{TRAINED[order]}: {figures['examples']} examples, "
            f"{args.steps} steps in {figures['train_s']} s, "
            f"loss {figures['loss_first']} -> {figures['loss_last']}, window {args.window} tokens, "
            f"{unreadable} of {len(held)} held-out calls unreadable",
            flush=True,
        )
    return {"critics": critics, "held": held, "trained": trained}


def _confusion(pairs: list[tuple[str, str]]) -> dict[str, float | None]:
    tp = sum(v == "flag" and y == "invalid" for v, y in pairs)
    fp = sum(v == "flag" and y == "valid" for v, y in pairs)
    fn = sum(v == "pass" and y == "invalid" for v, y in pairs)
    tn = sum(v == "pass" and y == "valid" for v, y in pairs)
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return {
        "mcc": (tp * tn - fp * fn) / denominator if denominator else None,
        "false_flag": fp / (fp + tn) if fp + tn else None,
        "detection": tp / (tp + fn) if tp + fn else None,
    }


def figures(rows: list[dict[str, Any]], verdicts: list[str], seed: int) -> dict[str, Any]:
    """MCC, false-flag and detection rates with 95% intervals resampling tasks (1,000, seeded)."""
    by_task: dict[str, list[tuple[str, str]]] = {}
    for row, verdict in zip(rows, verdicts, strict=True):
        by_task.setdefault(row["task"], []).append((verdict, row["label"]))
    flat = [pair for pairs in by_task.values() for pair in pairs]
    point = _confusion(flat)
    rng = random.Random(f"bootstrap:{seed}")
    tasks = sorted(by_task)
    draws: dict[str, list[float]] = {name: [] for name in point}
    for _ in range(1000):
        sample = [pair for task in (rng.choice(tasks) for _ in tasks) for pair in by_task[task]]
        for name, value in _confusion(sample).items():
            if value is not None:
                draws[name].append(value)
    intervals = {}
    for name, values in draws.items():
        values.sort()
        intervals[name] = (
            (values[int(0.025 * len(values))], values[int(0.975 * len(values)) - 1])
            if len(values) > 100
            else None
        )
    return {"calls": len(flat), **point, "ci": intervals}


def _cell(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" + ("" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]")


def table(result: dict[str, Any], seed: int) -> dict[str, Any]:
    held, trained = result["held"], result["critics"]
    out: dict[str, Any] = {}
    for split in SPLITS:
        index = [i for i, row in enumerate(held) if row["split"] == split]
        if not index:
            continue
        rows = [held[i] for i in index]
        critics = {name: [verdicts[i] for i in index] for name, verdicts in trained.items()}
        for name in rows[0]["baselines"]:
            critics[name] = [row["baselines"][name] for row in rows]
        measured = {name: figures(rows, chosen, seed) for name, chosen in critics.items()}
        print(f"\n{split}: {len(rows)} calls of {len({row['task'] for row in rows})} tasks")
        print(f"{'critic':40} {'calls':>5}  {'MCC [95% CI]':24} {'false-flag [95% CI]':24} {'detection':>9}")
        for name, item in measured.items():
            print(
                f"{name:40} {item['calls']:5}  {_cell(item['mcc'], item['ci']['mcc']):24} "
                f"{_cell(item['false_flag'], item['ci']['false_flag']):24} "
                f"{_cell(item['detection'], None):>9}"
            )
        bow = measured.get("bag of words", {}).get("ci", {}).get("mcc")
        beats_bow = {}
        for name in trained:
            interval = measured[name]["ci"]["mcc"]
            beats_bow[name] = bool(interval and bow and interval[0] > bow[1])
            print(f"beats_bow, {name} (MCC interval wholly above the bag of words'): {beats_bow[name]}")
        adds = None
        if set(TRAINED.values()) <= set(trained):
            first = measured[TRAINED["rationale-first"]]["ci"]["mcc"]
            only = measured[TRAINED["verdict"]]["ci"]["mcc"]
            adds = (
                "unmeasurable (an MCC undefined)"
                if not (first and only)
                else "better"
                if first[0] > only[1]
                else "worse"
                if first[1] < only[0]
                else "no credible difference"
            )
            print(
                f"what the rationale adds (MCC interval wholly above / below the verdict-only one's): {adds}"
            )
        out[split] = {"figures": measured, "beats_bow": beats_bow, "rationale_adds": adds}
    return out


class _LoRA:
    """y = base(x) + (x A^T) B^T * scale on a frozen linear layer (rank r, alpha 2r), hand-rolled."""

    @staticmethod
    def wrap(model: Any, rank: int) -> list[Any]:
        import torch

        params = []
        for module in list(model.modules()):
            for name in LORA_MODULES:
                layer = getattr(module, name, None)
                if not isinstance(layer, torch.nn.Linear):
                    continue
                down = torch.nn.Parameter(
                    torch.randn(rank, layer.in_features, device=layer.weight.device, dtype=layer.weight.dtype)
                    / math.sqrt(layer.in_features)
                )
                up = torch.nn.Parameter(
                    torch.zeros(
                        layer.out_features, rank, device=layer.weight.device, dtype=layer.weight.dtype
                    )
                )
                layer.register_parameter("lora_down", down)
                layer.register_parameter("lora_up", up)
                base = layer.forward

                def forward(x: Any, base: Any = base, down: Any = down, up: Any = up) -> Any:
                    return base(x) + (x @ down.t()) @ up.t() * 2.0

                layer.forward = forward
                params += [down, up]
        return params


def lora_step(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    device = torch.device(args.device)
    shape = SHRUNK if args.shrink else QWEN3_8B
    tokens = 128 if args.shrink else args.lora_tokens
    config = Qwen3Config(**shape, use_cache=False)
    torch.manual_seed(args.seed)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with device:
            model = Qwen3ForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    model.requires_grad_(False)
    adapters = _LoRA.wrap(model, 16)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.enable_input_require_grads()
    model.train()
    optimizer = torch.optim.AdamW(adapters, lr=1e-4)
    ids = torch.randint(0, shape["vocab_size"], (1, tokens), device=device)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None
    plan = json.loads((args.data / "plan.json").read_text())
    figures = {
        "shape": "shrunk (CPU smoke)" if args.shrink else "Qwen3-8B (random weights, bf16)",
        "params": sum(p.numel() for p in model.parameters()),
        "adapter_params": sum(p.numel() for p in adapters),
        "tokens": tokens,
        "loss": round(float(loss), 3),
        "seconds": round(seconds, 2),
        "tokens_per_s": round(tokens / seconds, 1),
        "peak_gib": None if peak is None else round(peak, 2),
        "plan_gib": round(plan["gib"], 2),
        "plan_parts": {name: round(value, 2) for name, value in plan["parts"].items()},
    }
    print(
        f"\nLoRA step, {figures['shape']}: {tokens} tokens in {figures['seconds']} s "
        f"({figures['tokens_per_s']} tokens/s), peak {figures['peak_gib']} GiB measured, "
        f"{figures['plan_gib']} GiB planned for Qwen3-8B at {plan['tokens']} tokens {figures['plan_parts']}"
    )
    return figures


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    found = preflight(args)
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    if args.shrink:
        args.steps, args.window, args.hidden, args.batch = min(args.steps, 20), 256, 32, 4
        args.rationale_tokens = min(args.rationale_tokens, 24)
    critic = critic_step(args)
    splits = table(critic, args.seed)
    lora = lora_step(args)
    payload = {
        "preflight": found,
        "critic": critic["trained"],
        "splits": splits,
        "lora": lora,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    # what the GPU image lacks must never have been needed
    payload["imported_but_absent_on_the_image"] = sorted(m for m in _ABSENT if m in sys.modules)
    print(json.dumps(payload, default=str))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ready = commands.add_parser("prepare", help="the data, here on a CPU (train extra)")
    ready.add_argument("--data", type=Path, required=True)
    ready.add_argument("--train-tasks", type=int, default=520)
    ready.add_argument("--test-tasks", type=int, default=60)
    ready.add_argument("--holdout-families", type=int, default=3)
    ready.add_argument("--window", type=int, default=1536)
    ready.add_argument("--seed", type=int, default=0)
    go = commands.add_parser("run", help="the check, on the GPU (torch, transformers, tokenizers)")
    go.add_argument("--data", type=Path, required=True)
    go.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    go.add_argument(
        "--shrink", action="store_true", help="CPU smoke: tiny shapes, 20 steps, 128-token LoRA step"
    )
    go.add_argument("--steps", type=int, default=1500)
    go.add_argument("--batch", type=int, default=16)
    go.add_argument("--window", type=int, default=1536, help="the critic's input and target, tokens")
    go.add_argument("--hidden", type=int, default=256)
    go.add_argument("--layers", type=int, default=4)
    go.add_argument("--vocab", type=int, default=4000)
    go.add_argument("--lr", type=float, default=1e-3)
    go.add_argument("--verdict-weight", type=float, default=1.0)
    go.add_argument(
        "--targets",
        default="verdict,rationale-first",
        help="the critics to train, by target order: verdict (verdict and failure type), rationale-first "
        "(the paper's: check and explanation, then verdict and failure type)",
    )
    go.add_argument(
        "--rationale-tokens",
        type=int,
        default=160,
        help="the longest rationale a rationale-first critic writes",
    )
    go.add_argument("--lora-tokens", type=int, default=8192)
    go.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        return prepare(args)
    args.targets = [order.strip() for order in args.targets.split(",") if order.strip()]
    for order in args.targets:
        if order not in TRAINED:
            fail(f"--targets {order!r}: verdict or rationale-first")
    if not args.data.is_dir():
        fail(f"--data {args.data}: no such folder (run prepare first)")
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
