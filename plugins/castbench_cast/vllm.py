"""Serving an open model with vLLM for castbench: the right `vllm serve` command, and the wait
until it answers (`castbench serve MODEL`, `castbench_cast.serve_cmd`; the CAST stages' served
checkpoints, `castbench_cast.serving`).

The CAST plugin owns these helpers (until 0.1.0 they were `castbench.agents`' and
`castbench._agents.models.serve`'s; `castbench.agents` still gives them, with a `DeprecationWarning`, until
castbench 0.2.0). This module imports nothing beyond the standard library, so `castbench serve`
needs no extra.

castbench never imports vLLM (it pins its own torch and transformers); it runs `vllm serve` as a
process and talks to its OpenAI-compatible API through litellm (`hosted_vllm/...`). Native tool
calls need `--enable-auto-tool-choice` and the tool-call parser of the model's family.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

__all__ = [
    "ServeError",
    "ServeOptions",
    "model_string",
    "tool_parser_for",
    "vllm_command",
    "wait_until_ready",
]

_TOOL_PARSERS = (
    ("qwen", "hermes"),
    ("qwq", "hermes"),
    ("hermes", "hermes"),
    ("llama", "llama3_json"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("ministral", "mistral"),
)
"""Model-name fragment -> vLLM tool-call parser, first match wins."""


class ServeError(RuntimeError):
    pass


def tool_parser_for(model: str) -> str | None:
    name = model.lower().rsplit("/", 1)[-1]
    return next((parser for fragment, parser in _TOOL_PARSERS if fragment in name), None)


@dataclass(frozen=True)
class ServeOptions:
    model: str
    host: str = "127.0.0.1"
    port: int = 8000
    tool_parser: str | None = None
    """None: chosen from the model's family."""
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    @property
    def api_base(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def vllm_command(options: ServeOptions) -> list[str]:
    parser = options.tool_parser or tool_parser_for(options.model)
    if parser is None:
        raise ServeError(
            f"no known tool-call parser for '{options.model}' (known families: "
            f"{', '.join(sorted({fragment for fragment, _ in _TOOL_PARSERS}))}); pass --tool-parser"
        )
    command = ["vllm", "serve", options.model, "--host", options.host, "--port", str(options.port)]
    command += ["--enable-auto-tool-choice", "--tool-call-parser", parser]
    if options.max_model_len is not None:
        command += ["--max-model-len", str(options.max_model_len)]
    if options.gpu_memory_utilization is not None:
        command += ["--gpu-memory-utilization", str(options.gpu_memory_utilization)]
    return command + list(options.extra_args)


def model_string(options: ServeOptions) -> str:
    """What to pass as `--policy` / `--critic` / `--user` to use the served model."""
    return f"hosted_vllm/{options.model}?api_base={options.api_base}"


def _served_models(api_base: str) -> list[str] | None:
    try:
        with urllib.request.urlopen(f"{api_base}/models", timeout=5) as response:
            listing = json.load(response)
    except (OSError, urllib.error.URLError, ValueError):
        return None
    return [str(item.get("id")) for item in listing.get("data", [])]


def wait_until_ready(
    api_base: str,
    timeout_s: float,
    process: subprocess.Popen[bytes] | None = None,
    poll_s: float = 2.0,
) -> list[str]:
    """Poll `/v1/models` until the server lists a model; the models it serves. Fails early when
    the server process exits."""
    deadline = time.monotonic() + timeout_s
    while True:
        served = _served_models(api_base)
        if served:
            return served
        if process is not None and process.poll() is not None:
            raise ServeError(f"the server exited with code {process.returncode} before answering")
        if time.monotonic() >= deadline:
            raise ServeError(f"{api_base}/models did not answer within {timeout_s:.0f} s")
        time.sleep(poll_s)
