"""Serving a checkpoint with vLLM: the command castbench starts and the model string it gives."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from castbench.models.serve import ServeError
from castbench_cast import serving
from castbench_cast.context import ContextRule
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
    name = serving.checkpoint_name(model)
    monkeypatch.setattr(
        serving,
        "wait_until_ready",
        lambda api_base, timeout_s, process: waited.append(api_base) or [name],
    )
    with CheckpointServer(model, "vllm", 8123, gpu_memory=0.4) as server:
        spec = server.model_string(temperature=0)
    command = started[0].command
    assert command[:3] == ["vllm", "serve", str(model)] and "--enable-auto-tool-choice" in command
    assert command[command.index("--served-model-name") + 1] == server.name
    assert command[command.index("--gpu-memory-utilization") + 1] == "0.4"
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


def _fake_vllm(monkeypatch: pytest.MonkeyPatch, served: list[str]) -> list[_Process]:
    started: list[_Process] = []
    monkeypatch.setattr(
        serving.subprocess, "Popen", lambda command: started.append(_Process(command)) or started[-1]
    )
    monkeypatch.setattr(serving, "wait_until_ready", lambda api_base, timeout_s, process: served)
    return started


def _checkpoint(tmp_path: Path) -> Path:
    model = tmp_path / "train-critic" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    return model


def test_vllm_port_zero_is_a_free_port_not_8000(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _checkpoint(tmp_path)
    started = _fake_vllm(monkeypatch, [serving.checkpoint_name(model)])
    with CheckpointServer(model, "vllm", 0) as server:
        port = server.port
    command = started[0].command
    assert port not in (0, 8000) and command[command.index("--port") + 1] == str(port)


def test_a_foreign_server_on_the_port_is_not_taken_as_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _checkpoint(tmp_path)
    started = _fake_vllm(monkeypatch, ["someone-elses-model"])
    with pytest.raises(ServeError, match="another server holds the port"):
        CheckpointServer(model, "vllm", 0).__enter__()
    assert started[0].terminated


def test_a_fixed_port_in_use_is_refused_before_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _checkpoint(tmp_path)
    started = _fake_vllm(monkeypatch, [serving.checkpoint_name(model)])
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(ServeError, match="is in use"):
            CheckpointServer(model, "vllm", busy.getsockname()[1]).__enter__()
    assert not started


def test_vllm_serves_with_the_trained_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _checkpoint(tmp_path)
    ContextRule(max_length=2048, max_completion=256).save(model)
    started = _fake_vllm(monkeypatch, [serving.checkpoint_name(model)])
    with CheckpointServer(model, "vllm", 0):
        pass
    command = started[0].command
    assert command[command.index("--max-model-len") + 1] == "2048"
