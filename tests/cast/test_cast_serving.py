"""Serving a checkpoint with vLLM: the command castbench starts and the model string it gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from castbench_cast import serving
from castbench_cast.serving import CheckpointServer


class _Process:
    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.terminated = False

    def terminate(self) -> None:
        self.terminated = True

    def wait(self, timeout: float) -> int:
        return 0


def test_vllm_backend_serves_the_checkpoint_under_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "train-critic" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    started: list[_Process] = []
    waited: list[Any] = []
    monkeypatch.setattr(
        serving.subprocess, "Popen", lambda command: started.append(_Process(command)) or started[-1]
    )
    monkeypatch.setattr(
        serving, "wait_until_ready", lambda api_base, timeout_s, process: waited.append(api_base)
    )
    with CheckpointServer(model, "vllm", 8123) as server:
        spec = server.model_string(temperature=0)
    command = started[0].command
    assert command[:3] == ["vllm", "serve", str(model)] and "--enable-auto-tool-choice" in command
    assert command[command.index("--served-model-name") + 1] == server.name
    assert server.name.startswith("cast-train-critic-")
    assert spec == f"hosted_vllm/{server.name}?api_base=http://127.0.0.1:8123/v1&temperature=0"
    assert waited == ["http://127.0.0.1:8123/v1"] and started[0].terminated


def test_the_served_name_changes_with_the_weights(tmp_path: Path) -> None:
    model = tmp_path / "train-policy" / "model"
    model.mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"one")
    first = serving.checkpoint_name(model)
    (model / "model.safetensors").write_bytes(b"two")
    assert serving.checkpoint_name(model) != first
