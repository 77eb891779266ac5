"""`castbench serve MODEL`: start vLLM's OpenAI-compatible server for a model, ready for castbench.

The CAST plugin's command (the `castbench.commands` entry point `serve`), beside the helpers it
runs (`castbench_cast.vllm`)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from castbench import fail
from castbench_cast.vllm import ServeError, ServeOptions, model_string, vllm_command, wait_until_ready

console = Console()


def serve_command(
    model: Annotated[str, typer.Argument(help="Hugging Face model id or local path, e.g. Qwen/Qwen3-8B.")],
    port: Annotated[int, typer.Option(help="Port to serve on.")] = 8000,
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = "127.0.0.1",
    tool_parser: Annotated[
        str | None, typer.Option(help="vLLM tool-call parser; default: from the model's family.")
    ] = None,
    max_model_len: Annotated[int | None, typer.Option(help="Context length to reserve.")] = None,
    gpu_memory_utilization: Annotated[
        float | None, typer.Option(help="Share of GPU memory vLLM may use.")
    ] = None,
    vllm_arg: Annotated[
        list[str] | None, typer.Option(help="Extra argument for vllm serve (repeatable).")
    ] = None,
    ready_timeout: Annotated[float, typer.Option(help="Seconds to wait for the server to answer.")] = 1800.0,
    dry_run: Annotated[
        bool, typer.Option(help="Print the command and the model string; start nothing.")
    ] = False,
) -> None:
    """Serve MODEL with vLLM (tool calling on), wait until it answers, print the --policy string."""
    options = ServeOptions(
        model, host, port, tool_parser, max_model_len, gpu_memory_utilization, tuple(vllm_arg or ())
    )
    try:
        command = vllm_command(options)
    except ServeError as exc:
        fail(exc)
    if dry_run:
        print(shlex.join(command))
        print(model_string(options))
        return
    if shutil.which("vllm") is None:
        fail(
            "vllm is not installed here (on a GPU machine: pip install 'castbench[vllm]'); "
            "on a CPU, serve a GGUF model with llama.cpp instead: see docs/models.md, "
            "'Try a real model without an API key'"
        )
    console.print(f"starting: {shlex.join(command)}", markup=False)
    process = subprocess.Popen(command)
    try:
        wait_until_ready(options.api_base, ready_timeout, process)
        console.print(
            f"[green]ready[/]: use --policy '{escape(model_string(options))}' (Ctrl-C stops the server)"
        )
        process.wait()
    except ServeError as exc:
        process.terminate()
        fail(exc, code=1)
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
