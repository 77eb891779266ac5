"""Serving a checkpoint: the vLLM command castbench starts (behind a front that fits prompts as
training did), the model string it gives (the checkpoint's own port, so a run resumes), LoRA
adapters served on their base, and prompts too long for the served context."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from castbench_cast import serving
from castbench_cast.context import ContextRule
from castbench_cast.serving import CheckpointServer
from castbench_cast.tiny import tiny_tokenizer
from castbench_cast.vllm import ServeError


def _with_tokenizer(model: Path) -> Path:
    """A checkpoint folder a server can read prompts with: a tiny tokenizer, a config."""
    model.mkdir(parents=True, exist_ok=True)
    words = ["policy document rules", "hello there", "call a tool", "Conversation so far"] * 5
    tiny_tokenizer(words, 300).save_pretrained(model)
    (model / "config.json").write_text(json.dumps({"model_type": "qwen3", "max_position_embeddings": 4096}))
    return model


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
    model = _with_tokenizer(tmp_path / "train-critic" / "model")
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
        spec = server.full_model_string(temperature=0)
        assert server.model_string(temperature=0) == f"hosted_vllm/{server.name}?temperature=0"
    command = started[0].command
    assert command[:3] == ["vllm", "serve", str(model)] and "--enable-auto-tool-choice" in command
    assert command[command.index("--served-model-name") + 1] == server.name
    assert command[command.index("--gpu-memory-utilization") + 1] == "0.4"
    assert server.name.startswith("cast-train-critic-")
    # the model string names the fitting front on 8123; vLLM itself listens behind it
    assert spec == f"hosted_vllm/{server.name}?api_base=http://127.0.0.1:8123/v1&temperature=0"
    behind = command[command.index("--port") + 1]
    assert behind != "8123" and waited == [f"http://127.0.0.1:{behind}/v1"] and started[0].terminated


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
    return _with_tokenizer(tmp_path / "train-critic" / "model")


def test_two_servers_of_one_checkpoint_run_side_by_side_under_one_model_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Port 0 is a free port picked at bind time: two servers of the same checkpoint (the same
    untrained base in two runs on one host) do not collide, and the model string (a run's
    identity) holds no port, so a resumed run matches whichever port its server gets."""
    model = _checkpoint(tmp_path)
    _fake_vllm(monkeypatch, [serving.checkpoint_name(model)])
    with CheckpointServer(model, "vllm", 0) as first, CheckpointServer(model, "vllm", 0) as second:
        assert first.port != second.port and 0 not in (first.port, second.port)
        assert first.model_string(temperature=0) == second.model_string(temperature=0)
        assert "api_base" not in first.model_string(temperature=0)
        assert first.models_config("critic") == {"critic": {"api_base": f"http://127.0.0.1:{first.port}/v1"}}
        assert f":{first.port}/v1" in first.full_model_string(temperature=0)


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


class _Upstream:
    """A stand-in for vLLM on a loopback port: records what it was asked, answers a verdict."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                outer.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": "{}"}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"


def _transcript(lines: int) -> list[dict[str, Any]]:
    body = "\n".join(f"User: hello there {i}" for i in range(lines))
    question = f"# Conversation so far\n{body}\n\n# Proposed action\ncall a tool"
    return [{"role": "system", "content": "policy document rules"}, {"role": "user", "content": question}]


def test_a_prompt_too_long_for_the_served_context_is_fitted_before_vllm_sees_it(tmp_path: Path) -> None:
    """vLLM rejects a prompt over its context (the trial would score 0): the front fits it by the
    training's rule first, the policy document kept, the oldest transcript lines left out."""
    model = _checkpoint(tmp_path)
    ContextRule(max_length=256, max_completion=32).save(model)
    upstream = _Upstream()
    try:
        front = serving._Forwarder(model, upstream.url, context=256)
        status, _ = front.complete({"messages": _transcript(400), "max_tokens": 32})
        assert status == 200 and front.truncated == 1
        sent = upstream.bodies[0]["messages"]
        assert sent[0]["content"] == "policy document rules"  # the policy stays whole
        assert "earlier line(s) left out to fit the context" in sent[1]["content"]
        assert sent[1]["content"].endswith("call a tool")
        assert front._count(sent) <= 256 - 32
    finally:
        upstream.http.shutdown()


def test_a_prompt_that_cannot_fit_is_an_infrastructure_failure_not_the_agents_zero(tmp_path: Path) -> None:
    """A policy document longer than the served context cannot be fitted: refused with a status
    castbench's client takes as an infrastructure failure (the trial is not scored), never a 400
    (a rejected request: the agent's 0), and nothing is sent to vLLM."""
    from castbench._agents.models.retry import classify

    model = _checkpoint(tmp_path)
    ContextRule(max_length=128, max_completion=32).save(model)
    upstream = _Upstream()
    try:
        front = serving._Forwarder(model, upstream.url, context=128)
        messages = [{"role": "system", "content": "policy document rules " * 200}, *_transcript(3)[1:]]
        status, answer = front.complete({"messages": messages, "max_tokens": 32})
    finally:
        upstream.http.shutdown()
    assert not upstream.bodies and "does not fit" in answer["error"]["message"]

    class Refused(Exception):
        status_code = status

    assert classify(Refused()) == "permanent"  # retried as infrastructure, then stored as an error


def test_a_lora_adapter_is_served_on_its_base_with_vllm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _checkpoint(tmp_path)
    (model / "config.json").unlink()
    (model / "adapter_config.json").write_text(
        json.dumps({"base_model_name_or_path": str(tmp_path / "base"), "r": 64})
    )
    _with_tokenizer(tmp_path / "base")
    started = _fake_vllm(monkeypatch, [serving.checkpoint_name(model)])
    with CheckpointServer(model, "vllm", 0) as server:
        name = server.name
    command = started[0].command
    assert command[2] == str(tmp_path / "base") and "--enable-lora" in command
    assert command[command.index("--lora-modules") + 1] == f"{name}={model}"
    assert command[command.index("--max-lora-rank") + 1] == "64"


def test_a_served_checkpoints_port_is_not_part_of_the_runs_identity() -> None:
    """Two runs of one checkpoint served on different free ports are the same run (resume
    matches); a different checkpoint, or a run whose role string holds its api_base (how runs
    were stored before), still differs by what it names."""
    from castbench._records.config import RunConfig

    def config(
        port: int, model: str = "openai/cast-train-critic-731dbf558b", critic: str | None = None
    ) -> RunConfig:
        return RunConfig.model_validate(
            {
                "domains": {"retail": "1"},
                "fingerprint": {"castbench": "x", "agents": {}, "domains": {}},
                "policy": "scripted:noisy",
                "critic": critic or f"{model}?temperature=0",
                "placement": {
                    "critic": {
                        "agent": model,
                        "where": "model",
                        "detail": f"{model} at http://127.0.0.1:{port}/v1",
                    }
                },
                "extra": {"models": {"critic": {"model": model, "api_base": f"http://127.0.0.1:{port}/v1"}}},
            }
        )

    assert config(41381).config_hash() == config(33123).config_hash()
    assert config(41381).config_hash() != config(41381, "openai/cast-train-critic-0123456789").config_hash()
    old = "openai/cast-train-critic-731dbf558b?api_base=http://127.0.0.1:{}/v1&temperature=0"
    assert (
        config(41381, critic=old.format(41381)).config_hash()
        != config(33123, critic=old.format(33123)).config_hash()
    )
    # what the run stored keeps the port it ran on
    assert "41381" in config(41381).model_dump_json()
