"""`castbench serve`: the vLLM command per model family, and the wait for a server to answer."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from castbench._cli.app import app
from castbench_cast import serve_cmd
from castbench_cast.vllm import ServeError, wait_until_ready
from tests.models.fault_server import FaultServer


@pytest.mark.parametrize(
    ("model", "parser"),
    [
        ("Qwen/Qwen3-8B", "hermes"),
        ("Qwen/Qwen2.5-7B-Instruct", "hermes"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3_json"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
    ],
)
def test_dry_run_prints_the_vllm_command_and_the_model_string(model: str, parser: str) -> None:
    result = CliRunner().invoke(
        app, ["serve", model, "--port", "8011", "--dry-run", "--max-model-len", "16384"]
    )
    assert result.exit_code == 0, result.output
    command, string = result.output.strip().splitlines()
    assert command == (
        f"vllm serve {model} --host 127.0.0.1 --port 8011 --enable-auto-tool-choice "
        f"--tool-call-parser {parser} --max-model-len 16384"
    )
    assert string == f"hosted_vllm/{model}?api_base=http://127.0.0.1:8011/v1"


def test_extra_arguments_and_an_explicit_parser() -> None:
    args = [
        "serve",
        "org/some-model",
        "--tool-parser",
        "pythonic",
        "--vllm-arg=--dtype",
        "--vllm-arg",
        "bfloat16",
        "--dry-run",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "--tool-call-parser pythonic --dtype bfloat16" in result.output


def test_an_unknown_family_needs_a_parser() -> None:
    result = CliRunner().invoke(app, ["serve", "org/some-model", "--dry-run"])
    assert result.exit_code == 2 and "--tool-parser" in result.output


def test_without_vllm_installed_it_says_so_and_points_to_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_cmd.shutil, "which", lambda name: None)
    result = CliRunner().invoke(app, ["serve", "Qwen/Qwen3-8B"], terminal_width=300)
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and "vllm is not installed" in output
    assert "llama.cpp" in output and "docs/models.md" in output


def test_wait_until_ready(fault_server: Callable[..., FaultServer]) -> None:
    server = fault_server(lambda body: {"content": ""})
    assert wait_until_ready(server.base_url, timeout_s=5) == ["fault-server"]


def test_wait_fails_early_when_the_server_dies() -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait()
    with pytest.raises(ServeError, match="exited with code 3"):
        wait_until_ready("http://127.0.0.1:9/v1", timeout_s=30, process=process, poll_s=0.01)


def test_wait_times_out() -> None:
    with pytest.raises(ServeError, match="did not answer"):
        wait_until_ready("http://127.0.0.1:9/v1", timeout_s=0.05, poll_s=0.01)
