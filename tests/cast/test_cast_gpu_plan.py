"""The GPU plan (`bench/cast_gpu_pipeline.py --dry-run`), checked on a CPU: an 8B model's full
fine-tuning at batch 8 x 8,192 tokens is flagged as not fitting one 141 GiB GPU, LoRA with
gradient checkpointing fits; checkpoints beyond 64 GiB of disk, vLLM shares over the GPU and a
port in use are problems; nothing is downloaded."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from castbench_cast.gpu_plan import plan
from castbench_cast.recipe import TrainStage

ROOT = Path(__file__).resolve().parents[2]

QWEN3_8B_SHAPE = {  # the published config's shape (Qwen3-8B), written locally: no download
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "tie_word_embeddings": False,
}


def _model(tmp_path: Path) -> str:
    folder = tmp_path / "qwen3-8b-shape"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN3_8B_SHAPE))
    return str(folder)


def _plan(
    model: str, shares: dict[str, float] | None = None, ports: dict[str, int] | None = None, **train: object
):
    settings = TrainStage(model=model, **train)  # type: ignore[arg-type]
    return plan(
        model,
        settings,
        steps=2000,
        gpu_gib=141,
        disk_gib=64,
        server_shares=shares or {"policy": 0.45, "critic": 0.45},
        ports=ports or {},
        serve="transformers",
    )


def test_full_fine_tuning_of_8b_at_batch_8_does_not_fit(tmp_path: Path) -> None:
    model = _model(tmp_path)
    full = _plan(model, batch=8, max_length=8192)
    assert full.shape is not None and 7.5e9 < full.shape.params < 8.5e9
    assert full.stages[0].gib > 141
    assert any("training needs about" in p for p in full.problems)
    assert any("checkpoints need about" in p for p in full.problems)
    lora = _plan(
        model,
        batch=1,
        grad_accum=8,
        max_length=8192,
        lora=True,
        gradient_checkpointing=True,
        save_steps=100_000,
    )
    assert lora.stages[0].gib < 141 * 0.5 and not [p for p in lora.problems if "training" in p or "disk" in p]
    assert lora.disk_gib is not None and lora.disk_gib < 64


def test_server_shares_and_ports_are_checked(tmp_path: Path) -> None:
    model = _model(tmp_path)
    settings = TrainStage(model=model, lora=True, batch=1, gradient_checkpointing=True)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        result = plan(
            model,
            settings,
            steps=10,
            gpu_gib=141,
            disk_gib=64,
            server_shares={"policy": 0.9, "critic": 0.9},
            ports={"critic server": busy.getsockname()[1]},
            serve="vllm",
        )
    assert any("add up to 1.80" in p for p in result.problems)
    assert any(p.startswith("critic server: port") for p in result.problems)


def test_dry_run_prints_the_plan(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "cast_gpu_pipeline.py"),
            "--dry-run",
            "--model",
            _model(tmp_path),
        ]
        + [
            "--serve",
            "transformers",
            "--lora",
            "--gradient-checkpointing",
            "--batch",
            "1",
            "--save-steps",
            "100000",
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "8.19B parameters" in done.stdout and "train-critic" in done.stdout and "plan: OK" in done.stdout
    assert "packages: torch " in done.stdout


RECIPES = ROOT / "plugins" / "castbench_cast" / "recipes"


def _paper_plan(**changes: object):  # type: ignore[no-untyped-def]
    from castbench_cast.gpu_plan import recipe_plan
    from castbench_cast.recipe import load_recipe

    recipe = load_recipe(RECIPES / "paper.toml")
    for table, fields in changes.items():
        recipe = recipe.model_copy(update={table: getattr(recipe, table).model_copy(update=fields)})  # type: ignore[arg-type]
    return recipe_plan(recipe, gpu_gib=139, disk_gib=64, teacher_share=0.4, base_share=0.15)


def test_the_papers_recipe_fits_one_h200_and_64_gib_of_disk() -> None:
    """Every phase of `castbench cast paper` on one GPU: the 32B teacher (also the user) stays up
    throughout, training runs beside it, the grid adds the base policy and both checkpoints."""
    plan = _paper_plan()
    assert plan.problems == [], plan.problems
    teacher = plan.servers["teacher"]
    assert teacher.model == "Qwen/Qwen3-32B-FP8" and teacher.shape is not None and teacher.shape.params > 3e10
    assert "user" not in plan.servers  # the same server answers as the user
    phases = {phase.name: phase for phase in plan.phases}
    assert all("teacher" in phase.servers for phase in plan.phases)
    assert set(phases["paper grid"].servers) == {
        "teacher",
        "base policy",
        "policy checkpoint",
        "grid critic checkpoint",
    }
    assert phases["train-critic"].training is not None and phases["collect-critic"].servers == [
        "teacher",
        "critic checkpoint",
    ]
    assert all(phase.gib(plan.servers, 139) <= 139 for phase in plan.phases)
    assert plan.disk_gib < 64 and any("Qwen3-32B-FP8" in item for item in plan.to_do)


def test_what_would_not_fit_is_a_problem() -> None:
    bf16 = "hosted_vllm/Qwen/Qwen3-32B?api_base=http://127.0.0.1:8000/v1"
    assert any(p.startswith("disk:") for p in _paper_plan(collect={"policy": bf16}).problems)
    merged = _paper_plan(train_critic={"merge_lora": True}, train_policy={"merge_lora": True})
    assert any(p.startswith("disk:") for p in merged.problems)
    greedy = _paper_plan(paper={"policy_gpu_memory": 0.45})  # vLLM's own 0.9 is worse still
    assert any("paper grid: the servers' shares add up to" in p for p in greedy.problems)
    full = _paper_plan(train_critic={"lora": False, "merge_lora": True})
    assert any(p.startswith("train-critic: about") for p in full.problems)


def test_dry_run_plans_the_papers_recipe() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "cast_gpu_pipeline.py"),
            "--dry-run",
            "--recipe",
            str(RECIPES / "paper.toml"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0 and "plan: OK" in done.stdout, done.stdout + done.stderr
    assert "phase paper grid" in done.stdout and "Qwen/Qwen3-32B-FP8" in done.stdout


def test_lora_adapts_every_layer_the_plan_sizes_at_the_asked_rank(tmp_path: Path) -> None:
    import argparse

    from castbench_cast.recipe import TinyModel
    from castbench_cast.tiny import tiny_model, tiny_tokenizer
    from castbench_cast.train import LORA_MODULES, lora_config

    config = lora_config(TrainStage(model="tiny", lora=True, lora_r=8))
    assert config.r == 8 and set(config.target_modules) == set(LORA_MODULES) and len(LORA_MODULES) == 7
    tokenizer = tiny_tokenizer(["some words to train a tokenizer on"] * 5, 300)
    model = tiny_model(tokenizer, TinyModel(hidden=16, layers=1, heads=2, vocab=300, context=256), 0)
    present = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    assert set(LORA_MODULES) <= present  # every adapted layer exists in the Qwen3 architecture
    sys.path.insert(0, str(ROOT / "bench"))
    import cast_gpu_pipeline

    parsed = argparse.Namespace(**{**_bench_defaults(cast_gpu_pipeline), "lora": True, "lora_r": 8})
    assert "lora_r = 8" in cast_gpu_pipeline._recipe(parsed)


def _bench_defaults(module: object) -> dict[str, object]:
    """The GPU bench's argument defaults, as its parser gives them."""
    import contextlib
    import io

    captured: dict[str, object] = {}

    def stop(args: object) -> int:
        captured.update(vars(args))
        return 0

    original = module.dry_run  # type: ignore[attr-defined]
    module.dry_run = stop  # type: ignore[attr-defined]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            module.main(["--dry-run"])  # type: ignore[attr-defined]
    finally:
        module.dry_run = original  # type: ignore[attr-defined]
    return captured
