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
